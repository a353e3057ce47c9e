import Foundation
import SessionStorage
import Testing

/// `sessionctl retention` and `compact --older-than`: the policy is the file's, so what
/// sessionctl sets a library writer applies, and the other way round.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RetentionCommandTests {
  @Test func showsSetsAndTurnsOffThePolicy() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let missing = try await sandbox.run(db: db, ["retention"])
    #expect(missing.status == 1)
    #expect(!sandbox.exists(db))
    for name in ["a", "b", "c", "d"] { #expect(try await sandbox.run(db: db, ["login", name]).status == 0) }
    #expect(
      try await sandbox.run(db: db, ["retention"]).stdout == "keep last  no limit\nmax age    no limit\n")
    let set = try await sandbox.run(db: db, ["retention", "--keep", "2"])
    #expect(set.status == 0, "\(set)")
    #expect(set.stdout == "keep last  2\nmax age    no limit\nremoved 2 entries; kept 3…4\n")
    let both = try await sandbox.run(db: db, ["retention", "--max-age", "30d", "--json"])
    #expect(
      both.stdout == #"{"type":"retention","keepLast":2,"maxAge":"30d"}"# + "\n"
        + #"{"type":"compaction","removed":0,"oldest":3,"head":4}"# + "\n")
    #expect(
      try await sandbox.run(db: db, ["retention", "-j"]).stdout
        == #"{"type":"retention","keepLast":2,"maxAge":"30d"}"# + "\n")
    #expect(
      try await sandbox.run(db: db, ["retention", "--off"]).stdout.hasPrefix(
        "keep last  no limit\nmax age    no limit\n"))
    #expect(try await sandbox.run(db: db, ["retention", "--off", "--keep", "3"]).status == 64)
  }

  @Test func aPolicySetBySessionctlIsAppliedByALibraryWriter() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["retention", "--keep", "3"]).status == 0)
    let store = try SessionStore(path: db, options: .init(origin: "app"))
    #expect(try store.requireFile().retention() == Retention(keepLast: 3))
    for index in 0..<8 { try await store.logIn(as: "user\(index)") }
    #expect(try store.history().map(\.cursor.value) == [6, 7, 8])
  }

  @Test func aPolicySetByTheLibraryIsAppliedBySessionctl() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let store = try SessionStore(path: db, options: .init(origin: "app"))
    try store.requireFile().setRetention(Retention(keepLast: 2, maxAge: .seconds(90)))
    #expect(try await sandbox.run(db: db, ["retention"]).stdout == "keep last  2\nmax age    90s\n")
    for name in ["a", "b", "c", "d", "e"] {
      #expect(try await sandbox.run(db: db, ["login", name]).status == 0)
    }
    #expect(try await sandbox.run(db: db, ["history"]).lines.map { $0.prefix(2) } == ["4 ", "5 "])
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
  }

  @Test func compactOlderThan() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    try await sandbox.sqlite(
      db,
      "INSERT INTO session_changes (seq, at, origin, old_is_logged_in, new_is_logged_in, old_updated_at) "
        + "VALUES (0, '2020-01-01T00:00:00.000Z', 'external', 0, 0, '2020-01-01T00:00:00.000Z')")
    let old = try await sandbox.run(db: db, ["compact", "--older-than", "12h"])
    #expect(old.stdout == "removed 1 entry; kept 1…1\n", "\(old)")
    let all = try await sandbox.run(db: db, ["compact", "--older-than=0s", "--json"])
    #expect(all.stdout == #"{"type":"compaction","removed":1,"oldest":null,"head":1}"# + "\n")
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
    let two = try await sandbox.run(db: db, ["compact", "--older-than", "1d", "--keep", "1"])
    #expect(two.status == 64)
    #expect(two.stderr.contains("give one of '--keep <n>', '--before <cursor>' and '--older-than <age>'"))
  }

  static let badDurations = [
    "", "30", "d", "1.5h", "+1d", "-1d", "1 d", " 1d", "1D", "30days", "1w", "1ms", "0x1s", "١d",
    "99999999999999999d", "1d1h",
  ]

  @Test(arguments: badDurations)
  func aBadDurationIsInvalidInput(_ text: String) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    for arguments in [["retention", "--max-age=\(text)"], ["compact", "--older-than=\(text)"]] {
      let outcome = try await sandbox.run(db: db, arguments)
      #expect(outcome.status == 65, "\(arguments): \(outcome)")
      #expect(
        outcome.stderr.hasPrefix("sessionctl: error: invalid duration ")
          && outcome.stderr.contains("expected a whole number and a unit: s, m, h or d (90s, 15m, 12h, 30d)"),
        "\(outcome)")
    }
  }

  /// `--older-than` and `--max-age` take ages up to 719528d, in any unit, and that largest
  /// age deletes nothing written a moment ago; one more (and ages whose cutoff SQLite cannot
  /// compute, which once deleted every change) is refused with 65, naming the option and
  /// the range, and deletes nothing.
  @Test func theLargestAgeIsAcceptedAndOneMoreIsRefused() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    #expect(try await sandbox.run(db: db, ["rename", "bob"]).status == 0)
    for largest in ["719528d", "17268672h", "1036120320m", "62167219200s"] {
      let compaction = try await sandbox.run(db: db, ["compact", "--older-than", largest])
      #expect(compaction.stdout == "removed 0 entries; kept 1…2\n", "\(largest): \(compaction)")
      let retention = try await sandbox.run(db: db, ["retention", "--max-age", largest])
      #expect(
        retention.lines == ["keep last  no limit", "max age    719528d", "removed 0 entries; kept 1…2"],
        "\(largest): \(retention)")
    }
    #expect(try await sandbox.run(db: db, ["retention", "--off"]).status == 0)
    for beyond in ["719529d", "17268673h", "1036120321m", "62167219201s", "3000000d", "106751991167d"] {
      for (command, option) in [("compact", "--older-than"), ("retention", "--max-age")] {
        let outcome = try await sandbox.run(db: db, [command, option, beyond])
        #expect(outcome.status == 65, "\(command) \(beyond): \(outcome)")
        #expect(
          outcome.stderr
            == "sessionctl: error: invalid duration '\(beyond)' for '\(option)': expected a whole number "
            + "and a unit: s, m, h or d (90s, 15m, 12h, 30d), at most 719528d\n")
      }
    }
    #expect(try await sandbox.run(db: db, ["history"]).lines.count == 2, "nothing was deleted")
    #expect(
      try await sandbox.run(db: db, ["retention"]).lines == [
        "keep last  no limit", "max age    no limit",
      ])
  }

  @Test func limitsThatWouldDeleteTheNewestChangeAreInvalidInput() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let zero = try await sandbox.run(db: db, ["retention", "--keep", "0"])
    #expect(zero.status == 65)
    #expect(zero.stderr == "sessionctl: error: the number of entries to keep must be 1 or more, not 0\n")
    let short = try await sandbox.run(db: db, ["retention", "--max-age", "0s"])
    #expect(short.status == 65)
    #expect(short.stderr == "sessionctl: error: the maximum age must be at least one second, not 0s\n")
    for good in ["90s", "15m", "12h", "30d"] {
      #expect(
        try await sandbox.run(db: db, ["retention", "--max-age", good]).lines.dropFirst().first
          == "max age    \(good)")
    }
  }
}

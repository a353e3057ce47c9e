import Foundation
import SystemKit
import TestSupport
import Testing

/// What `restore` cannot restore is refused before the store is touched, and what `backup`
/// cannot copy is blamed on the right file.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RestoreRefusalTests {
  /// A backup in another text encoding (UTF-16le; the store is UTF-8): SQLite's backup API
  /// would copy its pages into the store, whose open connections read them as UTF-8 from then
  /// on. Refused, saying how to convert it; the store stays UTF-8 and as it was, and a
  /// running `watch` goes on with the next change.
  @Test func aBackupInAnotherTextEncodingIsRefusedAndAWatchGoesOn() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "alice"], ["rename", "bob"]] {
      #expect(try await sandbox.run(db: db, command).status == 0)
    }
    let good = sandbox.path("good.db")
    #expect(try await sandbox.run(db: db, ["backup", good]).status == 0)
    // The same store, built with the sqlite3 shell in UTF-16le: it opens and passes check.
    let version = try await sandbox.sqlite(good, "PRAGMA user_version")
    let dump = try await sandbox.sqlite(good, ".dump")
    let utf16 = sandbox.path("utf16.db")
    try await sandbox.sqlite(
      utf16, "PRAGMA encoding = 'UTF-16le'; " + dump + "; PRAGMA user_version = \(version)")
    #expect(try await sandbox.sqlite(utf16, "PRAGMA encoding") == "UTF-16le")
    #expect(try await sandbox.run(db: utf16, ["check"]).status == 0)

    #expect(try await sandbox.run(db: db, ["login", "carol"]).status == 0)
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "--json"])
    defer { watch.kill(SIGKILL) }
    #expect(try await watch.readLine()?.contains(#""type":"snapshot""#) == true)
    let before = try await sandbox.sqlite(db, ".dump")

    let refused = try await sandbox.run(db: db, ["restore", utf16])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stdout == "")
    #expect(
      refused.stderr
        == "sessionctl: error: \(utf16): its text encoding is UTF-16le and the store's UTF-8, and SQLite cannot "
        + "restore a file of one encoding into a store of another; the store was not changed. Convert a copy to "
        + "UTF-8 ('sqlite3 FILE .dump | sqlite3 COPY && sqlite3 COPY \"PRAGMA user_version = \(version)\"'), "
        + "then restore the copy\n")
    #expect(try await sandbox.sqlite(db, "PRAGMA encoding") == "UTF-8")
    #expect(try await sandbox.sqlite(db, ".dump") == before, "the store was not changed")
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)

    // The watch goes on: the next change reaches it.
    #expect(try await sandbox.run(db: db, ["rename", "dave"]).status == 0)
    let line = try await watch.readLine()
    #expect(line?.contains(#""type":"change""#) == true, "\(line ?? "watch ended")")
    #expect(line?.contains(#""username":"dave""#) == true, "\(line ?? "watch ended")")
    watch.kill(SIGTERM)
    #expect(try await watch.wait(timeout: .seconds(30)) == 143, "the watch was still running")

    // Converted as the message says, it restores.
    let copy = sandbox.path("copy.db")
    try await sandbox.sqlite(copy, dump + "; PRAGMA user_version = \(version)")
    let restored = try await sandbox.run(db: db, ["restore", copy])
    #expect(restored.status == 0, "\(restored)")
    #expect(try await sandbox.run(db: db, ["status", "--json"]).stdout.contains(#""username":"bob""#))
  }
}

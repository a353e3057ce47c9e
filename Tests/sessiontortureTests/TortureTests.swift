import Foundation
import TestSupport
import Testing

/// The torture driver at CI size: crashes, concurrency with an outside client, and a
/// batch of random argument vectors against sessionctl. Each scenario verifies the file
/// through a fresh store; the test also reads it with the independent sqlite3 shell.
@Suite(.timeLimit(.minutes(30))) struct TortureTests {
  static let torture = ProcessRunner.product("sessiontorture")
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// Runs a scenario; returns its JSON summary.
  func scenario(_ arguments: [String]) async throws -> [String: Any] {
    let result = try await ProcessRunner.runDetached(
      Self.torture, arguments + ["--db", path], timeout: .seconds(1500))
    #expect(result.status == 0, "\(result.stderr)")
    let summary = try #require(result.stdout.split(separator: "\n").last)
    return try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
  }

  /// What the sqlite3 shell says about the file: integrity, cursors without holes, and a
  /// roster its feed explains.
  func independentlyConsistent() async throws {
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA integrity_check") == "ok\n")
    #expect(
      try await ProcessRunner.sqlite3(
        path, "SELECT count(*) = coalesce(max(seq) - min(seq) + 1, 0) FROM session_changes") == "1\n")
    // Each account is the `after` of the change its `seq` names (when compaction left it),
    // and the active account is one of the roster.
    let stale = try await ProcessRunner.sqlite3(
      path,
      "SELECT count(*) FROM accounts a JOIN session_changes c ON c.seq = a.seq WHERE c.account_id <> a.id "
        + "OR c.new_username IS NOT a.username OR c.new_is_logged_in <> a.is_logged_in")
    #expect(stale == "0\n")
    let dangling = try await ProcessRunner.sqlite3(
      path, "SELECT count(*) FROM active_account WHERE account_id NOT IN (SELECT id FROM accounts)")
    #expect(dangling == "0\n")
  }

  @Test func aWriterKilledAtRandomMomentsLosesNothingItAcknowledged() async throws {
    let summary = try await scenario(["crash", "--trials", "50"])
    #expect(summary["trials"] as? Int == 50)
    #expect(summary["problems"] as? Int == 0)
    #expect((summary["acknowledged"] as? Int ?? 0) > 0)
    try await independentlyConsistent()
  }

  @Test func writersReadersSubscribersAndAnOutsideClientAtOnce() async throws {
    let summary = try await scenario([
      "concurrency", "--writers", "4", "--writes", "250", "--external", "100",
    ])
    #expect(summary["changes"] as? Int == 1100)
    #expect(summary["problems"] as? Int == 0)
    #expect(
      try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM session_changes WHERE origin = 'external'")
        == "100\n")
    try await independentlyConsistent()
  }

  /// The chaos driver with fixed seeds: instances opened and released by path, link and
  /// relative path, writes through them, the sqlite3 shell, Python and sessionctl,
  /// compaction and retention, subscribers here and in other processes, killed writers,
  /// writers whose fsyncs fail, checkpoints — every outcome checked against the driver's
  /// model as it happens, and the file by a fresh process after every step; every change
  /// delivered within the bound. (With a `FileHandle` open of the database put back into
  /// `SharedDatabase.open`, every seed here fails within 20 steps.) Each seed makes some
  /// writes fail through the injected `EIO`, so that check is not vacuous.
  @Test(arguments: [20_261_130, 20_261_131, 20_261_132] as [UInt64])
  func chaosWithFixedSeedsLosesNothingAndSkipsNothing(seed: UInt64) async throws {
    let summary = try await scenario([
      "chaos", "--seed", String(seed), "--steps", "500", "--hang-seconds", "180", "--sessionctl",
      ProcessRunner.product("sessionctl"),
    ])
    #expect(summary["steps"] as? Int == 500)
    #expect(summary["problems"] as? Int == 0)
    #expect(summary["acknowledged"] as? Int ?? 0 > 50)
    #expect(summary["delivered"] as? Int ?? 0 > 50)
    #expect(summary["failedWrites"] as? Int ?? 0 > 0)
    try await independentlyConsistent()
  }

  /// The same driver as an unprivileged user (`nobody` when the suite runs as root), in a
  /// directory of that user's: permissions apply to every process it starts.
  @Test func chaosAsAnUnprivilegedUser() async throws {
    let place = dir.file("nobody")
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
    try Unprivileged.give(place)
    let result = try await Unprivileged.run(
      try Unprivileged.product("sessiontorture"),
      [
        "chaos", "--seed", "20261201", "--steps", "300", "--hang-seconds", "180", "--db",
        place + "/session.db",
        "--sessionctl",
        try Unprivileged.product("sessionctl"),
      ], home: place, timeout: .seconds(1500))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains(#""steps":300"#))
    #expect(result.stdout.contains(#""problems":0"#))
  }

  @Test func tenThousandRandomArgumentVectorsNeverCrashSessionctl() async throws {
    let summary = try await scenario([
      "fuzz-cli", "--sessionctl", ProcessRunner.product("sessionctl"), "--count", "10000", "--seed",
      "20261129",
    ])
    #expect(summary["vectors"] as? Int ?? 0 >= 10_000)
    #expect(summary["problems"] as? Int == 0)
    try await independentlyConsistent()
  }
}

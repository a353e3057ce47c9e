import Foundation
import TestSupport
import Testing

/// A write whose COMMIT fails (its `fsync`/`fdatasync` fails with EIO, injected with
/// `strace`) exits 1 with a message that says what became of the change, prints no change,
/// and a fresh process finds the state the message allows: never a change acknowledged but
/// absent.
@Suite(.timeLimit(.minutes(3))) struct CommitFailureCommandTests {
  let dir: TemporaryDirectory
  let database: String
  let environment: [String: String]

  init() throws {
    dir = try TemporaryDirectory()
    database = dir.file("session.db")
    try FileManager.default.createDirectory(atPath: dir.file("home"), withIntermediateDirectories: false)
    environment = ["HOME": dir.file("home"), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"]
  }

  func sessionctl(_ arguments: [String]) async throws -> ProcessResult {
    try await ProcessRunner.run(Sandbox.sessionctl, ["--db", database] + arguments, environment: environment)
  }

  /// `status --json` of a fresh process: the username and the cursor.
  func status() async throws -> (username: String?, cursor: Int) {
    let result = try await sessionctl(["status", "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    return (object["username"] as? String, try #require(object["cursor"] as? Int))
  }

  /// `sessionctl rename bob` with every `fsync`/`fdatasync` failing.
  func renameWhileSyncsFail() async throws -> Strace.Run {
    try await Strace.run(
      ["-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:error=EIO:when=1+"], Sandbox.sessionctl,
      ["--db", database, "rename", "bob"], environment: environment)
  }

  @Test func aRenameWhoseCommitCannotBeSyncedFailsPrintsNoChangeAndChangesNothing() async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    #expect(try await sessionctl(["login", "alice"]).status == 0)
    let run = try await renameWhileSyncsFail()
    #expect(!run.injected.isEmpty, "no sync failed: \(run)")
    #expect(run.status == 1, "\(run)")
    #expect(run.stdout == "", "a change was printed: \(run)")
    #expect(run.stderr.contains("could not be committed"), "\(run)")
    #expect(!run.stderr.hasSuffix(": disk I/O error (SQLite code 1034)\n"), "SQLite's words alone: \(run)")
    // The process closed the store: the change is gone, and nothing but alice's login is there.
    let (username, cursor) = try await status()
    #expect(username == "alice")
    #expect(cursor == 1)
    #expect(try await sessionctl(["history"]).stdout.split(separator: "\n").count == 1)
    #expect(try await sessionctl(["check"]).status == 0)
    // With the disk healthy again, the same rename goes through, at the next cursor.
    #expect(try await sessionctl(["rename", "bob"]).status == 0)
    let after = try await status()
    #expect(after.username == "bob")
    #expect(after.cursor == 2)
  }

  @Test func aFailedCommitMayComeBackAfterACrashAndTheMessageSaysSo() async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    #expect(try await sessionctl(["login", "alice"]).status == 0)
    // Another process keeps the store open and has committed into the -wal: the failed
    // commit's pages stay in the -wal file behind it.
    let holder = try await PythonConnection.open(database, scratch: dir.file("python.err"))
    try await holder.execute("UPDATE session SET username = 'held'")
    let run = try await renameWhileSyncsFail()
    #expect(run.status == 1, "\(run)")
    #expect(run.stdout == "", "a change was printed: \(run)")
    #expect(run.stderr.contains("may still be in the -wal file"), "\(run)")
    #expect(try await status().username == "held", "another process sees the change that failed")
    // A crash of the holder: the next opener recovers the WAL from the file. SQLite 3.40
    // finds the failed commit whole there and brings it back; either state is one the
    // message allowed, and the feed explains it.
    await holder.kill()
    let (username, cursor) = try await status()
    #expect(["held", "bob"].contains(username), "a state nobody wrote: \(username ?? "nil")")
    #expect(cursor == (username == "bob" ? 3 : 2))
    #expect(try await sessionctl(["check"]).status == 0)
  }
}

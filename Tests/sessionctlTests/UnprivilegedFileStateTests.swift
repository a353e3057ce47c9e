import Foundation
import TestSupport
import Testing

/// The file states and paths of ``JournalModeCommandTests`` and ``EnvironmentPathTests`` as a
/// normal user (as `nobody` when the suite runs as root, since root ignores mode bits).
@Suite(.timeLimit(.minutes(10))) struct UnprivilegedFileStateTests {
  let dir: TemporaryDirectory
  /// The user's own directory.
  let place: String
  let sessionctl: String

  init() throws {
    dir = try TemporaryDirectory()
    place = dir.file("place")
    sessionctl = try Unprivileged.product("sessionctl")
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
    try Unprivileged.give(place)
  }

  /// A missing directory followed by `..` in `HOME`: created with mode 0700 and the user's
  /// own, as the default location requires.
  @Test func aHomeThroughAMissingDirectory() async throws {
    let (program, line) = Unprivileged.command(sessionctl, ["login", "alice"])
    let login = try await ProcessRunner.run(
      program, line, environment: ["PATH": "/usr/bin:/bin", "HOME": place + "/missing/.."])
    #expect(login.status == 0, "\(login.stderr)")
    for directory in ["missing", ".local", ".local/share", ".local/share/sessionctl"] {
      var info = stat()
      #expect(stat(place + "/" + directory, &info) == 0, "\(directory)")
      #expect(info.st_mode & 0o777 == 0o700 && info.st_uid == Unprivileged.uid, "\(directory)")
    }
  }

  /// A store in rollback-journal mode in a directory the user cannot write (no `-wal` or
  /// `-shm` can be made there, and none is needed): read; a write cannot switch it back to
  /// WAL there and says so.
  @Test func aStoreInDeleteModeInADirectoryTheUserCannotWrite() async throws {
    let path = place + "/session.db"
    let (program, line) = Unprivileged.command(sessionctl, ["--db", path, "login", "alice"])
    #expect(try await ProcessRunner.run(program, line).status == 0)
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA journal_mode = DELETE") == "delete\n")
    chmod(place, 0o555)
    defer { chmod(place, 0o755) }
    let (statusProgram, statusLine) = Unprivileged.command(sessionctl, ["--db", path, "status"])
    let status = try await ProcessRunner.run(statusProgram, statusLine)
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("alice"), "\(status.stdout)")
    let (renameProgram, renameLine) = Unprivileged.command(sessionctl, ["--db", path, "rename", "bob"])
    let rename = try await ProcessRunner.run(renameProgram, renameLine)
    #expect(rename.status != 0)
    #expect(rename.stderr.contains(path), "\(rename.stderr)")
    #expect(try await ProcessRunner.sqlite3(path, "SELECT username FROM session") == "alice\n")
  }
}

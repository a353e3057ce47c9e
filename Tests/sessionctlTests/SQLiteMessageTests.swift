import Foundation
import SessionStorage
import TestSupport
import Testing

/// No bare SQLite message reaches a user: failures that SQLite reports as "unable to open
/// database file", "disk I/O error" or "attempt to write a readonly database" reach stderr
/// as the file and our sentence — what is wrong and what to do — with SQLite's words only
/// as the detail at the end.
@Suite(.timeLimit(.minutes(3))) struct SQLiteMessageTests {
  let dir: TemporaryDirectory
  /// The directory holding the store (everyone may traverse the temporary directory).
  let place: String
  let db: String

  init() throws {
    dir = try TemporaryDirectory()
    place = dir.file("place")
    db = place + "/s.db"
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
  }

  /// The environment of every child: exactly these variables.
  func clean(home: String) -> [String] { ["-i", "PATH=/usr/bin:/bin", "HOME=\(home)", "LC_ALL=C.UTF-8"] }

  /// Runs `sessionctl ARGUMENTS` (through `prefix`, e.g. strace) in a clean environment.
  func sessionctl(_ arguments: [String], prefix: [String] = []) async throws -> ProcessResult {
    try await ProcessRunner.runDetached(
      "/usr/bin/env", clean(home: place) + prefix + [ProcessRunner.product("sessionctl")] + arguments)
  }

  /// Runs `sessionctl --db DB ARGUMENTS` as the unprivileged user, in a clean environment.
  func asUser(_ arguments: [String]) async throws -> ProcessResult {
    let (program, line) = Unprivileged.command(
      "/usr/bin/env", clean(home: place) + [try Unprivileged.product("sessionctl"), "--db", db] + arguments)
    return try await ProcessRunner.runDetached(program, line)
  }

  /// A store with one change.
  func makeStore() async throws {
    let made = try await sessionctl(["--db", db, "login", "alice"])
    #expect(made.status == 0, "\(made.stderr)")
  }

  /// Exit 1, and one line of stderr that is `sessionctl: error: PATH: SENTENCE…`.
  func expectOurWords(
    _ result: ProcessResult, path: String, _ sentence: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(result.status == 1, "\(result.stderr)", sourceLocation: sourceLocation)
    #expect(
      result.stderr.hasPrefix("sessionctl: error: \(path): \(sentence)"), "\(result.stderr)",
      sourceLocation: sourceLocation)
    #expect(
      result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
    for bare in ["unable to open database file", "disk I/O error", "attempt to write a readonly database"]
    where result.stderr.contains(bare) {
      #expect(
        result.stderr.contains("(SQLite: \(bare))"), "SQLite's words only as the detail: \(result.stderr)",
        sourceLocation: sourceLocation)
    }
  }

  /// A `-wal` or `-shm` that is a FIFO or a directory: SQLite says "disk I/O error" or
  /// "unable to open database file"; we name the file, what it is, and what to do.
  @Test(arguments: [
    ("-wal", "fifo", ["rename", "bob"]), ("-wal", "directory", ["status"]), ("-shm", "fifo", ["status"]),
    ("-shm", "directory", ["rename", "bob"]),
  ])
  func aCompanionFileThatIsNotARegularFileIsNamed(suffix: String, kind: String, command: [String])
    async throws
  {
    try await makeStore()
    let companion = db + suffix
    unlink(companion)
    #expect(kind == "fifo" ? mkfifo(companion, 0o600) == 0 : mkdir(companion, 0o700) == 0)
    let result = try await sessionctl(["--db", db] + command)
    let what = kind == "fifo" ? "a FIFO (named pipe)" : "a directory"
    expectOurWords(
      result, path: db,
      "its \(suffix) file \(companion) is \(what), not a regular file: SQLite keeps the store's ")
    #expect(result.stderr.contains("move it away"), "\(result.stderr)")
  }

  /// A `-wal` this user may not open (root's, as a process of root's that had the store
  /// open leaves it; the user's own with mode 0 when the suite does not run as root): SQLite
  /// says "unable to open database file"; we name the `-wal`, its owner and mode, and the user.
  @Test func aWALThisUserMayNotOpenIsNamedWithItsOwner() async throws {
    try await makeStore()
    try Unprivileged.give(place)
    let wal = db + "-wal"
    #expect(FileManager.default.createFile(atPath: wal, contents: nil))
    let mode = getuid() == 0 ? 0o600 : 0
    chmod(wal, mode_t(mode))
    let owner = getuid()
    for command in [["status"], ["rename", "bob"], ["history"]] {
      let result = try await asUser(command)
      expectOurWords(
        result, path: db,
        "permission denied: this user (uid \(Unprivileged.uid)) may not open \(wal) (owner uid \(owner), "
          + "mode 0\(String(mode, radix: 8))); give this user access to it")
    }
  }

  /// A path longer than SQLite opens (fine for Linux): `pathTooLong`, with the lengths and
  /// what to do, before anything is created; a new store needs room for the name it is built
  /// under; an existing store right at the limit opens.
  @Test func aPathLongerThanSQLiteOpensIsRefusedWithItsLengths() async throws {
    let base = URL(fileURLWithPath: place).resolvingSymlinksInPath().path
    let deep = base + "/" + String(repeating: "d", count: 200) + "/" + String(repeating: "e", count: 200)
    try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true)
    func path(length: Int) -> String {
      deep + "/" + String(repeating: "f", count: length - deep.utf8.count - 4) + ".db"
    }
    // SQLite keeps 8 of its 512 bytes for "-journal"; a new store is built under a name up to
    // 31 bytes longer (".creating-PID-RANDOM"), so it needs less.
    let longest = 504
    let tooLongToCreate = path(length: longest)
    let create = try await sessionctl(["--db", tooLongToCreate, "login", "alice"])
    expectOurWords(
      create, path: tooLongToCreate,
      "the path is too long for SQLite: \(longest) bytes made absolute (with symbolic links followed), at most "
    )
    #expect(create.stderr.contains(" for a new store, which is built under a name "), "\(create.stderr)")
    #expect(create.stderr.contains("use a path in a directory whose full path is shorter"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: deep).isEmpty, "nothing created")
    let error = #expect(throws: SessionStorageError.self) { try SessionStore(path: tooLongToCreate) }
    #expect(error?.code == .pathTooLong)
    #expect(try await sessionctl(["--db", path(length: longest - 31), "login", "alice"]).status == 0)

    // Existing stores: made at a short path, then moved to a long one.
    for (length, opens) in [(longest, true), (longest + 1, false)] {
      let short = dir.file("short-\(length).db")
      #expect(try await sessionctl(["--db", short, "login", "alice"]).status == 0)
      let long = path(length: length)
      #expect(rename(short, long) == 0)
      let status = try await sessionctl(["--db", long, "status"])
      if opens {
        #expect(status.status == 0, "\(status.stderr)")
      } else {
        expectOurWords(
          status, path: long,
          "the path is too long for SQLite: \(length) bytes made absolute (with symbolic links followed), "
            + "SQLite opens at most \(longest); use a path")
        let read = #expect(throws: SessionStorageError.self) {
          try SessionStore(path: long, options: .init(readOnly: true))
        }
        #expect(read?.code == .pathTooLong)
      }
    }
  }

  /// A failed `fsync` during a commit (EIO injected with strace): SQLite says "disk I/O
  /// error"; we say which operation failed and what to check.
  @Test func anIOErrorDuringACommitSaysWhatFailedAndWhatToCheck() async throws {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
      Issue.record("strace is not installed (.ci/run installs it)")
      return
    }
    try await makeStore()
    let result = try await sessionctl(
      ["--db", db, "rename", "bob"],
      prefix: ["/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e", "inject=fsync,fdatasync:error=EIO"])
    expectOurWords(result, path: db, "syncing the file to disk (fsync) failed")
    #expect(result.stderr.contains("check the disk and its file system"), "\(result.stderr)")
  }

  /// The directory of a relative `--db` (the working directory) removed before the first
  /// write: our words name the reason and what to do.
  @Test func aDirectoryThatVanishedIsNamedAsTheReason() async throws {
    let gone = dir.file("gone")
    try FileManager.default.createDirectory(atPath: gone, withIntermediateDirectories: false)
    let result = try await ProcessRunner.runDetached(
      "/usr/bin/env",
      clean(home: place) + [
        "/bin/sh", "-c", #"cd "$1" && rmdir "$1" && exec "$0" --db s.db login alice"#,
        ProcessRunner.product("sessionctl"), gone,
      ])
    expectOurWords(
      result, path: "s.db", "cannot create the database file: its directory does not exist (any more)")
  }
}

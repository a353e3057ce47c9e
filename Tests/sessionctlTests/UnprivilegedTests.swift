import Foundation
import TestSupport
import Testing

/// `sessionctl` as a normal user (as `nobody` when the suite runs as root, since root
/// ignores mode bits): read-only directories, read-only files, someone else's file.
@Suite(.timeLimit(.minutes(10))) struct UnprivilegedTests {
  let dir: TemporaryDirectory
  /// The user's own directory, holding the store.
  let place: String
  let path: String
  let sessionctl: String

  init() throws {
    dir = try TemporaryDirectory()
    place = dir.file("place")
    path = place + "/session.db"
    sessionctl = try Unprivileged.product("sessionctl")
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
  }

  func asUser(_ arguments: [String]) async throws -> ProcessResult {
    try await Unprivileged.run(sessionctl, arguments, home: place)
  }

  /// A store with two changes, owned by the user.
  func makeStore() async throws {
    for command in [["login", "alice"], ["logout"]] {
      #expect(
        try await ProcessRunner.run(ProcessRunner.product("sessionctl"), ["--db", path] + command).status == 0
      )
    }
    #expect(FileManager.default.fileExists(atPath: path))
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    try Unprivileged.give(place)
  }

  /// A home the user cannot write: the first write to the default location cannot create
  /// its directory, says which one and why, and names the database it was for.
  @Test func theDefaultLocationUnderAHomeThatCannotBeWrittenIsRefusedClearly() async throws {
    try Unprivileged.give(place)
    chmod(place, 0o555)
    defer { chmod(place, 0o755) }
    let result = try await asUser(["login", "alice"])
    #expect(result.status == 1)
    #expect(
      result.stderr.hasPrefix(
        "sessionctl: error: \(place)/.local/share/sessionctl/session.db: cannot create the directory \(place)/.local: "
      ),
      "\(result.stderr)")
    #expect(result.stderr.contains("ermission denied"), "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: place + "/.local"))
  }

  /// The directory is the user's, but `chmod 555`: readers read, writers are told why,
  /// and nothing is written or created.
  @Test func aReadOnlyDirectoryServesReadersAndRefusesWritersClearly() async throws {
    try await makeStore()
    chmod(place, 0o555)
    defer { chmod(place, 0o755) }
    let before = try #require(FileManager.default.contents(atPath: path))

    let status = try await asUser(["--db", path, "status", "--json"])
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains(#""username":"alice","isLoggedIn":false"#))
    for read in [["history"], ["check"], ["watch", "--since", "0", "--limit", "2"]] {
      let result = try await asUser(["--db", path] + read)
      #expect(result.status == 0, "\(read): \(result.stderr)")
    }
    let history = try await asUser(["--db", path, "history"])
    #expect(history.stdout.split(separator: "\n").count == 2)

    for write in [
      ["login", "bob"], ["logout"], ["rename", "bob"], ["migrate"], ["compact", "--keep", "0"],
    ] {
      let result = try await asUser(["--db", path] + write)
      #expect(result.status == 1, "\(write)")
      #expect(result.stderr.contains("cannot write the directory \(place)"), "\(write): \(result.stderr)")
      #expect(!result.stderr.contains("attempt to write a readonly database"))
    }
    #expect(FileManager.default.contents(atPath: path) == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: place) == ["session.db"])
  }

  /// The file is `chmod 400` in a directory the user can write: readers read, writers are
  /// told the file cannot be written.
  @Test func aReadOnlyFileServesReadersAndRefusesWritersClearly() async throws {
    try await makeStore()
    chmod(path, 0o400)
    let before = try #require(FileManager.default.contents(atPath: path))
    let status = try await asUser(["--db", path, "status"])
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("alice"))
    let login = try await asUser(["--db", path, "login", "bob"])
    #expect(login.status == 1)
    #expect(login.stderr.contains("permission denied: this user cannot write the file"), "\(login.stderr)")
    // What to do in sessionctl's terms: it has no read-only option, it has commands that only read.
    #expect(
      login.stderr.hasSuffix(
        "; read it with status, history, watch or check (they open it read-only)\n"),
      "\(login.stderr)")
    #expect(FileManager.default.contents(atPath: path) == before)
  }

  /// Someone else's file (root's, or another user's, mode 0600): the error says whose
  /// and why, for readers and writers.
  @Test func someoneElsesFileIsRefusedWithTheReason() async throws {
    try await makeStore()
    chmod(path, 0o000)
    defer { chmod(path, 0o600) }
    for command in [["status"], ["login", "bob"]] {
      let result = try await asUser(["--db", path] + command)
      #expect(result.status == 1)
      #expect(result.stderr.contains("permission denied: this user cannot read the file"), "\(result.stderr)")
      #expect(!result.stderr.contains("unable to open database file"))
    }
  }

  /// A new store where the user cannot create files: refused, nothing created.
  @Test func aNewStoreInADirectoryTheUserCannotWriteIsRefused() async throws {
    try Unprivileged.give(place)
    chmod(place, 0o555)
    defer { chmod(place, 0o755) }
    let result = try await asUser(["--db", path, "login", "alice"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("cannot create the database file: Permission denied"), "\(result.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: place).isEmpty)
  }
}

import Foundation
import Testing

/// libpq is loaded when a PostgreSQL store is opened, not when `sessionctl` starts: a command
/// on a SQLite file never maps it (nor the ~25 libraries it needs), and one on a URL where
/// libpq cannot be loaded says what to install.
@Suite struct LibPQLoadingTests {
  /// A store URL whose server refuses at once: a command on it loads libpq, then exits 69.
  static let refusingURL = "postgresql://127.0.0.1:1/none?schema=none"

  /// The file names the dynamic loader loaded, from the `LD_DEBUG=files` lines on stderr
  /// (`file=libpq.so.5 [0];  dynamically loaded by …`).
  static func loadedFiles(_ outcome: Outcome) -> Set<String> {
    Set(
      outcome.stderr.split(separator: "\n").compactMap { line in
        line.range(of: "file=").map { String(line[$0.upperBound...].prefix { $0 != " " }) }
      })
  }

  @Test func aCommandOnAFileLoadsNoLibpqAndOneOnAURLDoes() async throws {
    let sandbox = try Sandbox()
    let database = sandbox.path("session.db")
    #expect(try await sandbox.run(db: database, ["login", "alice"]).status == 0)
    for arguments in [["status"], ["login", "bob"], ["history", "--limit", "10"], ["--version"]] {
      let outcome = try await sandbox.run(["--db", database] + arguments, environment: ["LD_DEBUG": "files"])
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
      let loaded = Self.loadedFiles(outcome)
      #expect(loaded.contains("libsqlite3.so.0"), "\(arguments): the loader's report is missing: \(outcome)")
      #expect(!loaded.contains { $0.contains("libpq") }, "\(arguments) loaded \(loaded.sorted())")
    }
    let postgres = try await sandbox.run(
      ["--db", Self.refusingURL, "status"], environment: ["LD_DEBUG": "files"])
    #expect(postgres.status == 69, "\(postgres)")
    #expect(Self.loadedFiles(postgres).contains("libpq.so.5"), "\(postgres)")
  }

  @Test func aLibpqThatCannotBeLoadedIsASentenceAndFilesStillWork() async throws {
    let sandbox = try Sandbox()
    // A libpq.so.5 that the loader finds first and cannot load.
    let libraries = sandbox.path("lib")
    try FileManager.default.createDirectory(atPath: libraries, withIntermediateDirectories: false)
    try Data("not a library".utf8).write(to: URL(fileURLWithPath: libraries + "/libpq.so.5"))
    sandbox.environment["LD_LIBRARY_PATH"] = libraries

    let refused = try await sandbox.run(db: Self.refusingURL, ["status"])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stdout.isEmpty)
    #expect(
      refused.stderr.hasPrefix(
        "sessionctl: error: \(Self.refusingURL): cannot open a PostgreSQL store: libpq cannot be loaded ("
          + "\(libraries)/libpq.so.5: "),
      "\(refused)")
    #expect(
      refused.stderr.hasSuffix(
        "); install PostgreSQL's client library: the package libpq5 on Debian and Ubuntu "
          + "(apt-get install libpq5), libpq with Homebrew (brew install libpq)\n"),
      "\(refused)")
    #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused)")

    // A file needs no libpq: the same environment runs every command on it.
    let database = sandbox.path("session.db")
    let login = try await sandbox.run(db: database, ["login", "alice"])
    #expect(login.status == 0, "\(login)")
    let status = try await sandbox.run(db: database, ["status"])
    #expect(status.status == 0, "\(status)")
    #expect(status.stdout.contains("greeting   Hello, alice\n"), "\(status)")
  }
}

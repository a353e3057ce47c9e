import Foundation
import SystemKit
import TestSupport
import Testing

/// SIGINT and SIGTERM in the middle of `backup` end it with 130 and 143 and leave nothing
/// behind: no hidden staged copy, none of its companions, nothing at the target.
@Suite(.serialized, .timeLimit(.minutes(10))) struct InterruptedBackupTests {
  /// The staged files of a backup to `b.db` (or of a new store `name`) in the sandbox's root.
  func staged(_ sandbox: Sandbox, of name: String = "b.db") throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.hasPrefix(".\(name).") }
  }

  /// A sandbox with a store `s.db` holding a few changes.
  func storeWithChanges() async throws -> (Sandbox, String) {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "alice"], ["rename", "bob"], ["logout"]] {
      #expect(try await sandbox.run(db: db, command).status == 0)
    }
    return (sandbox, db)
  }

  /// Runs `sessionctl backup` of `db` to `b.db` under `strace` with `tracing` (which slows
  /// it down where the signal must arrive), sends `signal` as soon as the staged copy
  /// appears, and expects the exit status of the signal, nothing left behind and nothing
  /// reported.
  func interruptBackup(
    _ sandbox: Sandbox, _ db: String, with signal: Int32, tracing: [String],
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await interrupt(
      sandbox, ["--db", db, "backup", sandbox.path("b.db")], staging: "b.db", with: signal, tracing: tracing,
      sourceLocation: sourceLocation)
    #expect(
      try await sandbox.run(db: db, ["check"]).status == 0, "the store is fine",
      sourceLocation: sourceLocation)
  }

  /// Runs `sessionctl arguments` under `strace` with `tracing`, sends `signal` as soon as
  /// the staged file of `name` appears, and expects the exit status of the signal, nothing
  /// at `name`, no staged file or companion, and nothing on standard output.
  func interrupt(
    _ sandbox: Sandbox, _ arguments: [String], staging name: String, with signal: Int32, tracing: [String],
    sourceLocation: SourceLocation
  ) async throws {
    let strace = try await ChildProcess(
      Strace.executable, ["-f", "-qq", "-o", "/dev/null"] + tracing + [Sandbox.sessionctl] + arguments,
      environment: sandbox.environment, stdout: .file(sandbox.path("io/stdout")),
      stderr: .file(sandbox.path("io/stderr")))
    defer { strace.kill(SIGKILL) }
    var seen = false
    for _ in 0..<3000 where !seen {
      seen = try !staged(sandbox, of: name).isEmpty
      if !seen { try await Task.sleep(for: .milliseconds(10)) }
    }
    #expect(seen, "the staged file appears", sourceLocation: sourceLocation)
    // The traced sessionctl is strace's child.
    let children = String(
      decoding: sandbox.contents("/proc/\(strace.pid)/task/\(strace.pid)/children") ?? Data(), as: UTF8.self)
    let child = try #require(
      pid_t(children.split(separator: " ").first ?? ""), "strace's child: '\(children)'",
      sourceLocation: sourceLocation)
    #expect(kill(child, signal) == 0, sourceLocation: sourceLocation)
    let stderr = String(decoding: sandbox.contents(sandbox.path("io/stderr")) ?? Data(), as: UTF8.self)
    #expect(
      try await strace.wait(timeout: .seconds(60)) == 128 + signal, "\(stderr)",
      sourceLocation: sourceLocation)
    #expect(
      try staged(sandbox, of: name) == [], "no staged file or companion is left",
      sourceLocation: sourceLocation)
    #expect(!sandbox.exists(sandbox.path(name)), sourceLocation: sourceLocation)
    let stdout = sandbox.contents(sandbox.path("io/stdout")) ?? Data()
    #expect(stdout.isEmpty, "nothing was reported as written", sourceLocation: sourceLocation)
  }

  @Test(.enabled(if: Strace.isAvailable), arguments: [SIGINT, SIGTERM])
  func aSignalDuringABackupLeavesNoStagedCopy(_ signal: Int32) async throws {
    let (sandbox, db) = try await storeWithChanges()
    // Every pwrite(2) takes half a second: the copy takes seconds, and the signal arrives
    // while it is being written.
    try await interruptBackup(
      sandbox, db, with: signal,
      tracing: ["-e", "trace=pwrite64", "-e", "inject=pwrite64:delay_enter=500000"])
  }

  /// The staged file's name is kept for the signal handler before the file is made: a
  /// signal the moment it appears — while the next call, `fchmod(2)`, is held up — finds
  /// its name.
  @Test(.enabled(if: Strace.isAvailable), arguments: [SIGINT, SIGTERM])
  func aSignalRightAfterTheStagedCopyIsMadeLeavesNoStagedCopy(_ signal: Int32) async throws {
    let (sandbox, db) = try await storeWithChanges()
    try await interruptBackup(
      sandbox, db, with: signal,
      tracing: ["-e", "trace=fchmod", "-e", "inject=fchmod:delay_enter=3000000"])
  }

  /// A signal while a new store is built in its staged file (right after the file is made,
  /// and while it is migrated) leaves no staged file and no store.
  @Test(
    .enabled(if: Strace.isAvailable),
    arguments: [SIGINT, SIGTERM],
    [
      ["-e", "trace=fchmod", "-e", "inject=fchmod:delay_enter=3000000"],
      ["-e", "trace=pwrite64", "-e", "inject=pwrite64:delay_enter=500000"],
    ])
  func aSignalWhileAStoreIsCreatedLeavesNothing(_ signal: Int32, tracing: [String]) async throws {
    let sandbox = try Sandbox()
    try await interrupt(
      sandbox, ["--db", sandbox.path("n.db"), "login", "alice"], staging: "n.db", with: signal,
      tracing: tracing,
      sourceLocation: #_sourceLocation)
  }

  /// The calls of a traced run that open or make a file whose name contains `staged` and
  /// ends with one of SQLite's suffixes.
  func companions(in run: Strace.Run, of staged: String) -> [String] {
    run.calls.filter { line in
      line.contains(staged) && ["-journal\"", "-wal\"", "-shm\""].contains { line.contains($0) }
    }
  }

  /// A signal handler can remove the names it knows, but cannot stop another thread that
  /// goes on making a file: a backup makes nothing beside its staged copy (no `-journal`
  /// while it is written, no `-wal` or `-shm` while it is verified), and SQLite never
  /// creates the staged copy itself (it is made once, `O_EXCL`).
  @Test(.enabled(if: Strace.isAvailable)) func aBackupMakesNothingBesideItsStagedCopy() async throws {
    let (sandbox, db) = try await storeWithChanges()
    let run = try await Strace.run(
      ["-e", "trace=/^(open|openat2?|creat|linkat?|renameat2?|rename)$"], Sandbox.sessionctl,
      ["--db", db, "backup", sandbox.path("b.db")], environment: sandbox.environment)
    #expect(run.status == 0, "\(run)")
    #expect(companions(in: run, of: "/.b.db.backup-") == [], "\(run)")
    let creations = run.calls.filter { $0.contains("/.b.db.backup-") && $0.contains("O_CREAT") }
    #expect(creations.count == 1 && creations.allSatisfy { $0.contains("O_EXCL") }, "\(run)")
    #expect(try staged(sandbox) == [])
    #expect(try await sandbox.run(db: sandbox.path("b.db"), ["check"]).status == 0)
  }

  /// The same for a new store, built in a private file before it is linked into place.
  @Test(.enabled(if: Strace.isAvailable)) func aNewStoreMakesNothingBesideItsStagedFile() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("n.db")
    let run = try await Strace.run(
      ["-e", "trace=/^(open|openat2?|creat|linkat?|renameat2?|rename)$"], Sandbox.sessionctl,
      ["--db", db, "login", "alice"], environment: sandbox.environment)
    #expect(run.status == 0, "\(run)")
    #expect(companions(in: run, of: "/.n.db.creating-") == [], "\(run)")
    let creations = run.calls.filter { $0.contains("/.n.db.creating-") && $0.contains("O_CREAT") }
    #expect(creations.count == 1 && creations.allSatisfy { $0.contains("O_EXCL") }, "\(run)")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.hasPrefix(".n.db.") }
        == [])
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
    #expect(try await sandbox.sqlite(db, "PRAGMA journal_mode") == "wal")
  }
}

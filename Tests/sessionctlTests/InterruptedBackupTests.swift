import Foundation
import SystemKit
import TestSupport
import Testing

/// SIGINT and SIGTERM in the middle of `backup` end it with 130 and 143 and leave nothing
/// behind: no hidden staged copy, none of its companions, nothing at the target.
@Suite(.serialized, .timeLimit(.minutes(10))) struct InterruptedBackupTests {
  /// The staged files of a backup to `b.db` in the sandbox's root.
  func staged(_ sandbox: Sandbox) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.hasPrefix(".b.db.") }
  }

  @Test(.enabled(if: Strace.isAvailable), arguments: [SIGINT, SIGTERM])
  func aSignalDuringABackupLeavesNoStagedCopy(_ signal: Int32) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "alice"], ["rename", "bob"], ["logout"]] {
      #expect(try await sandbox.run(db: db, command).status == 0)
    }
    // Every pwrite(2) takes half a second: the copy takes seconds, and the signal arrives
    // while it is being written.
    let strace = try await ChildProcess(
      Strace.executable,
      [
        "-f", "-qq", "-o", "/dev/null", "-e", "trace=pwrite64", "-e", "inject=pwrite64:delay_enter=500000",
        Sandbox.sessionctl, "--db", db, "backup", sandbox.path("b.db"),
      ], environment: sandbox.environment, stdout: .file(sandbox.path("io/stdout")),
      stderr: .file(sandbox.path("io/stderr")))
    defer { strace.kill(SIGKILL) }
    var seen = false
    for _ in 0..<3000 where !seen {
      seen = try !staged(sandbox).isEmpty
      if !seen { try await Task.sleep(for: .milliseconds(10)) }
    }
    #expect(seen, "the staged copy appears")
    // The traced sessionctl is strace's child.
    let children = String(
      decoding: sandbox.contents("/proc/\(strace.pid)/task/\(strace.pid)/children") ?? Data(), as: UTF8.self)
    let child = try #require(
      pid_t(children.split(separator: " ").first ?? ""), "strace's child: '\(children)'")
    #expect(kill(child, signal) == 0)
    #expect(try await strace.wait(timeout: .seconds(60)) == 128 + signal)
    #expect(try staged(sandbox) == [], "no staged copy or companion is left")
    #expect(!sandbox.exists(sandbox.path("b.db")))
    let stdout = sandbox.contents(sandbox.path("io/stdout")) ?? Data()
    #expect(stdout.isEmpty, "nothing was reported as written")
    #expect(try await sandbox.run(db: db, ["check"]).status == 0, "the store is fine")
  }
}

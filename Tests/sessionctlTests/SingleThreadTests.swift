import Foundation
import TestSupport
import Testing

/// Every command but `watch` runs on the main thread alone: it starts no thread (Swift
/// concurrency's pool, the signal thread), which would cost a short command more than its
/// work. Observed with `strace`, which records every thread the process creates.
@Suite struct SingleThreadTests {
  /// The `clone`/`clone3` calls of `sessionctl arguments` (threads and processes alike).
  func clones(_ sandbox: Sandbox, _ arguments: [String]) async throws -> (Strace.Run, [String]) {
    let run = try await Strace.run(
      ["-e", "trace=clone,clone3"], Sandbox.sessionctl, arguments, environment: sandbox.environment)
    return (run, run.calls.filter { $0.contains("clone") })
  }

  @Test func commandsOnAFileStartNoThreadAndWatchDoes() async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    let sandbox = try Sandbox()
    let database = sandbox.path("session.db")
    for arguments in [
      ["login", "alice"], ["status"], ["--json", "status"], ["history", "--limit", "10"], ["rename", "bob"],
      ["logout"], ["check"], ["compact", "--keep", "1"], ["--version"], ["help", "status"],
    ] {
      let (run, clones) = try await clones(sandbox, ["--db", database] + arguments)
      #expect(run.status == 0, "\(arguments): \(run)")
      #expect(clones.isEmpty, "\(arguments) started threads: \(run)")
    }
    // The observation sees the threads `watch` needs (it fails after starting them here).
    let (watch, clones) = try await clones(sandbox, ["--db", database, "watch", "--since", "999"])
    #expect(watch.status == 65, "\(watch)")
    #expect(!clones.isEmpty, "\(watch)")
  }
}

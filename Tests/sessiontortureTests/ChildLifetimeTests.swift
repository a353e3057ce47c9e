import Foundation
import SystemKit
import TestSupport
import Testing

/// A program's children end with it, however it ends: SIGKILL leaves no handler to run,
/// yet its Python writer, its writer and subscriber processes go with it (``ChildGroup``).
/// The test runner's own children are started the same way.
@Suite(.timeLimit(.minutes(10))) struct ChildLifetimeTests {
  @Test(arguments: [SIGKILL, SIGTERM, SIGINT])
  func theChildrenOfAKilledDriverEndWithIt(signal: Int32) async throws {
    let dir = try TemporaryDirectory()
    let driver = try await ChildProcess(
      ProcessRunner.product("sessiontorture"),
      [
        "concurrency", "--writers", "2", "--writes", "1000000", "--external", "1000000", "--db",
        dir.file("session.db"),
      ], environment: ProcessRunner.environment(home: dir.path), stdout: .null, stderr: .null)
    // Its subscribers, writers, readers, the Python writer and the group's guardian.
    var children = Set<pid_t>()
    let started = await eventually {
      children = ProcessTable.descendants(of: driver.pid)
      return children.count >= 5
    }
    #expect(started, "the driver started \(children.count) processes")
    driver.kill(signal)
    #expect(try await driver.wait(timeout: .seconds(60)) == 128 + signal)
    let ended = await eventually(timeout: .seconds(30)) {
      children.allSatisfy { !ProcessTable.isRunning($0) }
    }
    #expect(ended, "still running: \(children.filter(ProcessTable.isRunning).sorted())")
  }
}

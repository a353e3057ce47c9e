import Foundation
import TestSupport
import Testing
import ToolingKit

/// How the tests run child processes (`TestSupport.ProcessRunner`): awaited without holding
/// a thread of the cooperative pool, and with an environment of their own.
@Suite(.timeLimit(.minutes(10))) struct ProcessRunnerTests {
  /// More children than the pool has threads wait at once for a file that only another task
  /// of this test creates: if waiting for them held pool threads, that task would never run
  /// and every child would run into its timeout.
  @Test func waitingChildrenLeaveThePoolToOtherTasks() async throws {
    let dir = try TemporaryDirectory()
    let signal = dir.file("go")
    let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
    let script = "while [ ! -e \"$1\" ]; do sleep 0.05; done"
    let statuses = try await withThrowingTaskGroup(of: Int32?.self) { group in
      for _ in 0..<count {
        group.addTask {
          try await ProcessRunner.run("/bin/sh", ["-c", script, "sh", signal], timeout: .seconds(120)).status
        }
      }
      group.addTask {
        // Give the children time to start, then let them go.
        try await Task.sleep(for: .milliseconds(200))
        _ = FileManager.default.createFile(atPath: signal, contents: nil)
        return nil
      }
      var statuses: [Int32] = []
      for try await status in group { statuses += status.map { [$0] } ?? [] }
      return statuses
    }
    #expect(statuses == Array(repeating: 0, count: count))
  }

  /// The caller's environment (`XDG_DATA_HOME`, `SESSIONCTL_DB`, `CI`, `PG*` …) does not
  /// reach a child: it gets `PATH`, `LC_ALL`, `TMPDIR` and an empty `HOME`, plus what the
  /// test gives.
  @Test func aChildGetsOnlyTheEnvironmentTheTestGives() async throws {
    let plain = try await environment(of: [:])
    #expect(Set(plain.keys) == ["PATH", "LC_ALL", "TMPDIR", "HOME"], "\(plain)")
    #expect(plain["LC_ALL"] == "C.UTF-8")
    let home = try #require(plain["HOME"])
    #expect(!home.isEmpty && home != ProcessInfo.processInfo.environment["HOME"])
    #expect(
      !FileManager.default.fileExists(atPath: home), "an empty directory of the run's own, removed after")
    let given = try await environment(of: ["XDG_DATA_HOME": "/nowhere", "HOME": "/home/given"])
    #expect(Set(given.keys) == ["PATH", "LC_ALL", "TMPDIR", "HOME", "XDG_DATA_HOME"], "\(given)")
    #expect(given["HOME"] == "/home/given")
    #expect(given["XDG_DATA_HOME"] == "/nowhere")
  }

  /// What `/usr/bin/env` prints when `ProcessRunner` runs it with `extra`.
  func environment(of extra: [String: String]) async throws -> [String: String] {
    let result = try await ProcessRunner.run("/usr/bin/env", [], environment: extra)
    #expect(result.status == 0, "\(result.stderr)")
    var variables: [String: String] = [:]
    for line in result.stdout.split(separator: "\n") {
      guard let equals = line.firstIndex(of: "=") else { continue }
      variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return variables
  }
}

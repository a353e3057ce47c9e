import Foundation
import ProcessKit
import TestSupport

/// The sandbox's blocking calls on a thread of their own (``onThreadOfItsOwn(_:)``), so
/// that a test waiting for a child process holds none of the few threads of the cooperative
/// pool. The test's expectations stay on its own task: an `#expect` made on another thread
/// is not attributed to the test.
extension Sandbox {
  /// ``run(_:environment:)``, on a thread of its own.
  func running(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> Outcome {
    // The sandbox is used by one thread at a time: the caller waits for this one.
    nonisolated(unsafe) let sandbox = self
    return try await onThreadOfItsOwn { try sandbox.run(arguments, environment: extra) }
  }

  /// ``run(db:_:)``, on a thread of its own.
  func running(db database: String, _ arguments: [String]) async throws -> Outcome {
    try await running(["--db", database] + arguments)
  }

  /// The sqlite3 shell on `database` with `sql`, on a thread of its own; what it printed,
  /// without the last newline, and its status.
  func sqliteRunning(_ database: String, _ sql: String) async throws -> Outcome {
    nonisolated(unsafe) let sandbox = self
    var outcome = try await onThreadOfItsOwn {
      try sandbox.runProgram(Self.sqlite3, ["-batch", database, sql], environment: sandbox.environment)
    }
    outcome.stdout = outcome.stdout.trimmingCharacters(in: .newlines)
    return outcome
  }
}

extension ChildProcess {
  /// ``readLine(timeout:)``, on a thread of its own.
  func nextLine(timeout: Duration = .seconds(20)) async throws -> String? {
    try await onThreadOfItsOwn { try self.readLine(timeout: timeout) }
  }

  /// ``wait(timeout:)``, on a thread of its own.
  func exitStatus(within timeout: Duration) async throws -> Int32 {
    try await onThreadOfItsOwn { try self.wait(timeout: timeout) }
  }
}

import Foundation

/// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns
/// whether it held. For waiting on effects that arrive asynchronously (a view model's
/// property, a child process's output), never for measuring speed.
public func eventually(
  timeout: Duration = .seconds(5), _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return try await condition()
}

/// The number of open file descriptors of this process.
public func openFileDescriptorCount() -> Int {
  (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The bytes of a file, for byte-identical comparisons.
public func fileBytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

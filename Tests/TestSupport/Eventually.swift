import Foundation
import Synchronization

/// Polls `condition` every few milliseconds (sleeping with `Task.sleep`, so that the thread
/// is free meanwhile) until it holds or `timeout` passes; returns whether it held. For
/// waiting on effects that arrive asynchronously (a view model's property, a child
/// process's output), never for measuring speed: `timeout` is a hang guard.
public func eventually(
  timeout: Duration = .seconds(60), isolation: isolated (any Actor)? = #isolation,
  _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return try await condition()
}

/// The open file descriptors of this process that belong to `directory`: files inside it,
/// and inotify instances watching it (found by inode in /proc/self/fdinfo). Tests run in
/// parallel in one process, so only descriptors tied to a test's own directory can be counted.
public func openFileDescriptors(for directory: String) -> [String] {
  let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var info = stat()
  guard stat(directory, &info) == 0 else { return [] }
  let inode = "ino:" + String(UInt64(info.st_ino), radix: 16) + " "
  return fds.compactMap { fd -> String? in
    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)
    else {
      return nil
    }
    if target.hasPrefix(directory + "/") { return target }
    if target == "anon_inode:inotify",
      let details = try? String(contentsOfFile: "/proc/self/fdinfo/" + fd, encoding: .utf8),
      details.contains(inode)
    {
      return target
    }
    return nil
  }.sorted()
}

/// The bytes of a file, for byte-identical comparisons.
public func fileBytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

/// A count that a child task raises as it goes and the test waits on with ``eventually``:
/// "the subscriber has read four entries", rather than a sleep that assumes it.
public final class Tally: Sendable {
  private let count = Mutex(0)

  /// A count at zero.
  public init() {}

  /// The count so far.
  public var value: Int { count.withLock { $0 } }

  /// Raises the count by one.
  public func advance() { count.withLock { $0 += 1 } }
}

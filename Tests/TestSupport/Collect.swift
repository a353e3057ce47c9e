/// The first `count` elements of `sequence`, or a `Timeout` error when they do not all
/// arrive within `timeout` (a hang guard, ample for a loaded machine).
public func first<S: AsyncSequence & Sendable>(
  _ count: Int, of sequence: S, within timeout: Duration = .seconds(60)
) async throws -> [S.Element] where S.Element: Sendable {
  try await withThrowingTaskGroup(of: [S.Element]?.self) { group in
    group.addTask {
      var received: [S.Element] = []
      var iterator = sequence.makeAsyncIterator()
      while received.count < count, let element = try await iterator.next() { received.append(element) }
      return received
    }
    group.addTask {
      try await Task.sleep(for: timeout)
      return nil
    }
    defer { group.cancelAll() }
    guard let result = try await group.next(), let received = result else {
      throw Timeout(waited: timeout)
    }
    return received
  }
}

/// Nothing arrived in time.
public struct Timeout: Error, CustomStringConvertible {
  /// How long was waited.
  public var waited: Duration
  /// A sentence.
  public var description: String { "nothing arrived within \(waited)" }
}

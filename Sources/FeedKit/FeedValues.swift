/// The latest state for a view model: the current state first, then each new state as
/// changes commit, consecutive equal states dropped.
///
/// Unlike ``FeedSubscription`` it favours the latest value over every step: when its
/// cursor was compacted away it takes a fresh snapshot instead of failing.
public struct FeedValues<Event: Sendable, Value: Equatable & Sendable>: AsyncSequence, Sendable {
  /// Each element is a state.
  public typealias Element = Value
  /// The source's read errors end iteration with a throw.
  public typealias Failure = any Error

  let feed: Feed<Event, Value>
  let state: @Sendable (FeedEntry<Event>) -> Value

  /// Starts with a snapshot read when iteration begins.
  public func makeAsyncIterator() -> Iterator { Iterator(feed: feed, state: state) }

  /// Reads a snapshot, then follows the changes after it.
  public struct Iterator: AsyncIteratorProtocol {
    let feed: Feed<Event, Value>
    let state: @Sendable (FeedEntry<Event>) -> Value
    private var changes: FeedSubscription<Event, Value>.Iterator?
    private var last: Value?

    init(feed: Feed<Event, Value>, state: @escaping @Sendable (FeedEntry<Event>) -> Value) {
      self.feed = feed
      self.state = state
    }

    /// The next distinct state; nil once the task is cancelled.
    public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> Value? {
      while !Task.isCancelled {
        guard var iterator = changes else {
          let start = try feed.snapshotAndChanges()
          changes = start.changes.makeAsyncIterator()
          if let value = distinct(start.state) { return value }
          continue
        }
        do {
          guard let entry = try await iterator.next(isolation: actor) else { return nil }
          changes = iterator
          if let value = distinct(state(entry)) { return value }
        } catch is FeedError {
          changes = nil
        }
      }
      return nil
    }

    /// The next distinct state (see ``next(isolation:)``).
    public mutating func next() async throws -> Value? { try await next(isolation: nil) }

    private mutating func distinct(_ value: Value) -> Value? {
      guard value != last else { return nil }
      last = value
      return value
    }
  }
}

/// The latest state for a view model: the current state first, then each new state as
/// changes commit, consecutive equal states dropped.
///
/// Unlike ``FeedSubscription`` it favours the latest value over every step: when its
/// cursor was compacted away it takes a fresh snapshot instead of failing.
public struct FeedValues<Change: Sendable, Value: Equatable & Sendable>: AsyncSequence, Sendable {
  /// Each element is a state.
  public typealias Element = Value
  /// The source's read errors end iteration with a throw.
  public typealias Failure = any Error

  let feed: Feed<Change, Value>
  let state: @Sendable (FeedEntry<Change>) -> Value
  /// A snapshot already read and shown: iteration follows the changes after it instead of
  /// reading one (and does not deliver its state again).
  let start: SnapshotSubscription<Change, Value>?

  /// Starts with a snapshot read when iteration begins, or after the one it was made from.
  public func makeAsyncIterator() -> Iterator { Iterator(feed: feed, state: state, start: start) }

  /// Reads a snapshot, then follows the changes after it.
  public struct Iterator: AsyncIteratorProtocol {
    let feed: Feed<Change, Value>
    let state: @Sendable (FeedEntry<Change>) -> Value
    private var changes: FeedSubscription<Change, Value>.Iterator?
    private var last: Value?
    private var ended = false

    init(
      feed: Feed<Change, Value>, state: @escaping @Sendable (FeedEntry<Change>) -> Value,
      start: SnapshotSubscription<Change, Value>?
    ) {
      self.feed = feed
      self.state = state
      changes = start?.changes.makeAsyncIterator()
      last = start?.state
    }

    /// The next distinct state; nil once the task is cancelled, and from then on (also after
    /// a throw), whichever task asks.
    public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> Value? {
      do {
        guard !ended, let value = try await following(isolation: actor) else {
          end()
          return nil
        }
        return value
      } catch {
        end()
        throw error
      }
    }

    private mutating func end() {
      ended = true
      changes = nil
    }

    private mutating func following(isolation actor: isolated (any Actor)?) async throws -> Value? {
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

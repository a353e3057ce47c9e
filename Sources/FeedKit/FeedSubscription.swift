/// Every entry after a cursor, once, in commit order, as an `AsyncSequence`.
///
/// Entries are pulled from the log in pages, so a slow subscriber falls behind without
/// slowing writers or queueing in memory. Iteration ends (returns nil) when the task is
/// cancelled, and an iterator that ended (returned nil or threw) stays ended.
///
/// A subscription registers for wake-ups when it is created, so that ``wakeMode`` can
/// say at once how it will learn of other processes' commits: while a subscription or
/// one of its iterators is kept, the store's cross-process watcher (a thread and an
/// inotify descriptor) keeps running, even if nothing iterates. An iterator releases the
/// registration when it ends; drop the subscription (and its iterators) to release it.
public struct FeedSubscription<Change: Sendable, Snapshot: Sendable>: AsyncSequence, Sendable {
  /// Each element is one committed entry.
  public typealias Element = FeedEntry<Change>
  /// Compaction (``FeedError``) and the store's read errors end iteration with a throw; a
  /// fault the store knows to pass (a database server that cannot be reached for now) is
  /// waited out instead.
  public typealias Failure = any Error

  let feed: Feed<Change, Snapshot>
  /// The cursor this subscription resumes after.
  public let cursor: Cursor
  let listener: WakeListener
  /// The entry at ``cursor``, when the log held it at the start: reads check it stays.
  let last: FeedEntry<Change>?
  /// Which entries it delivers; nil for all. The others are read and passed over, so the
  /// cursors stay the log's.
  let include: (@Sendable (FeedEntry<Change>) -> Bool)?

  init(
    feed: Feed<Change, Snapshot>, cursor: Cursor, listener: WakeListener, last: FeedEntry<Change>? = nil,
    include: (@Sendable (FeedEntry<Change>) -> Bool)? = nil
  ) {
    self.feed = feed
    self.cursor = cursor
    self.listener = listener
    self.last = last
    self.include = include
  }

  /// How this subscription learns of other processes' commits. A subscription never waits
  /// without a mechanism that can wake it: when file notifications cannot be set up (a
  /// descriptor or inotify limit), it polls, and this says so and why.
  public var wakeMode: WakeMode { feed.signal.mode }

  /// Starts reading after ``cursor``.
  public func makeAsyncIterator() -> Iterator {
    Iterator(feed: feed, cursor: cursor, listener: listener, last: last, include: include)
  }

  /// Pulls pages after the last delivered cursor, and waits on the signal when caught up.
  public struct Iterator: AsyncIteratorProtocol {
    let feed: Feed<Change, Snapshot>
    /// The cursor of the last entry delivered (or the start).
    public private(set) var cursor: Cursor
    /// The wake-up registration, until iteration ends.
    private var listener: WakeListener?
    private var buffer: ArraySlice<Element> = []
    /// The entry delivered last: each read checks that the log still holds it.
    private var last: Element?
    /// The signal's generation before the last read, when that read returned less than a
    /// page (it reached the head): once its entries are delivered there is nothing more to
    /// read until a wake-up past it, so the next call waits without reading again.
    private var caughtUpAt: UInt64?
    /// Whether the task was suspended until a wake-up since its last page read (its
    /// executor ran other work meanwhile).
    private var suspendedSinceRead = false
    private let include: (@Sendable (Element) -> Bool)?

    init(
      feed: Feed<Change, Snapshot>, cursor: Cursor, listener: WakeListener, last: Element?,
      include: (@Sendable (Element) -> Bool)?
    ) {
      self.feed = feed
      self.cursor = cursor
      self.listener = listener
      self.last = last
      self.include = include
    }

    /// The next entry, waiting for one to commit; nil once the task is cancelled, and from
    /// then on (also after a throw), whichever task asks.
    public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> Element? {
      while listener != nil, !Task.isCancelled {
        if let entry = buffer.popFirst() {
          cursor = entry.cursor
          last = entry
          if let include, !include(entry) { continue }
          return entry
        }
        if let generation = caughtUpAt {
          caughtUpAt = nil
          suspendedSinceRead = await feed.signal.wait(past: generation)
          continue
        }
        // A page read runs on the caller's executor, and a subscriber behind a fast writer
        // finds entries every time without waiting: it lets the executor's other work run
        // first, so that following a feed never holds an actor (the main actor of a view
        // model) for as long as the writer keeps writing. A task that was suspended until
        // a wake-up has let it run already.
        if !suspendedSinceRead { await Task.yield() }
        suspendedSinceRead = false
        guard !Task.isCancelled else { break }
        let generation = feed.signal.generation
        do {
          buffer = try feed.subscriberPage(after: cursor, last: last)[...]
        } catch  where feed.source.isTransient(error) {
          // A fault that passes (an unreachable server): read again at the next wake-up.
          suspendedSinceRead = await feed.signal.wait(past: generation)
          continue
        } catch {
          listener = nil
          throw error
        }
        if buffer.isEmpty {
          suspendedSinceRead = await feed.signal.wait(past: generation)
        } else if buffer.count < feed.pageSize {
          caughtUpAt = generation
        }
      }
      listener = nil
      return nil
    }

    /// The next entry (see ``next(isolation:)``).
    public mutating func next() async throws -> Element? { try await next(isolation: nil) }
  }
}

/// A state, the cursor it was read at, and every change after it: no gap, no duplicate.
public struct SnapshotSubscription<Change: Sendable, Snapshot: Sendable>: Sendable {
  /// The state at ``cursor``.
  public let state: Snapshot
  /// The newest entry included in ``state``.
  public let cursor: Cursor
  /// Every entry after ``cursor``.
  public let changes: FeedSubscription<Change, Snapshot>

  /// The states after ``state``: each new state as changes commit, consecutive equal states
  /// dropped, re-reading a snapshot where the cursor was compacted away. For a screen that
  /// showed ``state`` already and must not read the state a second time.
  /// - Parameter state: the state after an entry, given the state before it.
  public func values(_ state: @escaping @Sendable (Snapshot, FeedEntry<Change>) -> Snapshot) -> FeedValues<
    Change, Snapshot
  >
  where Snapshot: Equatable {
    FeedValues(feed: changes.feed, state: state, start: self)
  }
}

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
  let state: @Sendable (Value, FeedEntry<Change>) -> Value
  /// A snapshot already read and shown: iteration follows the changes after it instead of
  /// reading one (and does not deliver its state again).
  let start: SnapshotSubscription<Change, Value>?

  /// Starts with a snapshot read when iteration begins, or after the one it was made from.
  public func makeAsyncIterator() -> Iterator { Iterator(feed: feed, state: state, start: start) }

  /// Reads a snapshot, then follows the changes after it.
  public struct Iterator: AsyncIteratorProtocol {
    let feed: Feed<Change, Value>
    let state: @Sendable (Value, FeedEntry<Change>) -> Value
    private var changes: FeedSubscription<Change, Value>.Iterator?
    private var last: Value?
    private var ended = false

    init(
      feed: Feed<Change, Value>, state: @escaping @Sendable (Value, FeedEntry<Change>) -> Value,
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
          // `last` is the state now: a snapshot delivered it, and a state equal to it is the
          // only one ever dropped.
          guard let current = last else { continue }
          if let value = distinct(state(current, entry)) { return value }
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

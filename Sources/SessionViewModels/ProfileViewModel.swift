import Observation
import SessionStorage

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A profile screen's state, following the active account live: the greeting, the login
/// state and the last change move as commits arrive, from this process, other processes or
/// the sqlite3 shell; a switch to another account shows that account's greeting.
///
/// Creating one opens nothing and reads nothing: SwiftUI runs a view's initializer, and so
/// `State(initialValue: ProfileViewModel(session:))`, on every re-render of its parent and
/// throws most of those objects away. The work runs in ``follow()``, which the view starts
/// and cancels with its own lifetime:
///
/// ```swift
/// Text(model.greeting).task { await model.follow() }
/// ```
///
/// ``follow()`` reads a snapshot (username and login state committed together), then every
/// change after its cursor, so the screen never shows a state that was never committed. It
/// never stops at a dead end: a history rewritten under it (a restore of an older backup)
/// is read again from a new snapshot; a read that fails is tried again every
/// ``retryInterval``; a view model made with a ``SessionOpener`` opens the store again when
/// its file is replaced or deleted and recreated, and shows ``Phase/noSessionYet`` until a
/// first write creates it.
@Observable
@MainActor
public final class ProfileViewModel: ObservableViewModel {
  /// What the screen shows: the session, or why not.
  public enum Phase: Sendable, Equatable {
    /// ``ProfileViewModel/follow()`` has not read the session yet.
    case idle
    /// The fields show the session, and follow each change.
    case following
    /// There is no store yet (its file is created by the first write): the opener is tried
    /// again every ``SessionOpener/retryInterval``.
    case noSessionYet
    /// The session cannot be read now (the reason says why); it is read again every
    /// ``ProfileViewModel/retryInterval``.
    case unavailable(reason: String)
    /// The store handed to ``ProfileViewModel/init(session:retryInterval:)`` can never be
    /// read again: its file was replaced or deleted. The app opens the store again and hands
    /// the new one to a new view model (or builds the view model with a ``SessionOpener``,
    /// which does this itself). ``ProfileViewModel/follow()`` returns.
    case reopenRequired(reason: String)
  }

  /// What the screen shows: the session, or why not.
  public private(set) var phase = Phase.idle
  /// "Hello, <username>", what ``Greeting`` says for a signed-out session,
  /// ``Greeting/loading`` before the first read, ``Greeting/noSessionYet`` before the store
  /// exists, or ``Greeting/unavailable`` while the session cannot be read.
  public private(set) var greeting = Greeting.loading
  /// The current username, if any (nil until the first read).
  public private(set) var username: String?
  /// Whether the user is signed in (false until the first read).
  public private(set) var isLoggedIn = false
  /// Who made the last change of the active account and when, from the entries the feed
  /// delivers (no second subscription). Nil before the first read and for a session that
  /// never changed.
  ///
  /// Until the first change after ``follow()`` started, it comes from the snapshot, which
  /// records when the state last changed but not who changed it: its
  /// ``LastChange/origin`` is nil then, and a screen shows only the time.
  public private(set) var lastChange: LastChange?
  /// Why the fields do not show the session: the reason of ``Phase/unavailable(reason:)`` or
  /// ``Phase/reopenRequired(reason:)``; nil otherwise.
  public var readError: String? {
    switch phase {
    case .unavailable(let reason), .reopenRequired(let reason): reason
    case .idle, .following, .noSessionYet: nil
    }
  }
  /// Why the last sign-out failed; nil after one succeeds.
  public private(set) var writeError: String?
  /// Whether a sign-out is in progress (it may wait for another process's write lock).
  public private(set) var isSigningOut = false
  /// How long ``follow()`` waits before it reads (or opens) the session again after a failure.
  public let retryInterval: Duration

  /// Where the session comes from: handed in, or opened by ``follow()``.
  @ObservationIgnored private let source: SessionSource
  /// The store ``logOut()`` writes through: the one handed in, or the one the running
  /// ``follow()`` opened (nil while none is open).
  @ObservationIgnored private var session: (any SessionRepository)?
  /// Tells apart the calls of ``follow()``, so that one that ends releases only what it opened.
  @ObservationIgnored private var followers = 0

  /// Follows `session` once ``follow()`` runs; opens and reads nothing here.
  /// - Parameters:
  ///   - session: the store, built by the composition root.
  ///   - retryInterval: how long ``follow()`` waits before it reads the session again after
  ///     a read failed.
  public init(session: any SessionRepository, retryInterval: Duration = .seconds(1)) {
    source = .store(session)
    self.session = session
    self.retryInterval = retryInterval
  }

  /// Follows the store `opener` opens once ``follow()`` runs; opens nothing here.
  ///
  /// ``follow()`` opens the store, shows ``Phase/noSessionYet`` while the opener finds
  /// none (`SessionStorageError` `notFound`: a read-only store before the first write), and
  /// opens it again when its file is replaced or deleted and recreated. It releases the
  /// store when it returns.
  public init(opener: SessionOpener) {
    source = .opener(opener)
    session = nil
    retryInterval = opener.retryInterval
  }

  /// Shows the session and follows every change until the calling task is cancelled, then
  /// returns, holding nothing it opened (subscription, watcher, store). Start it with the
  /// view: `.task { await model.follow() }`.
  ///
  /// It reads a snapshot, then the changes after it. A history rewritten under it is
  /// followed again from a new snapshot; a failed read or open is tried again every
  /// ``retryInterval``. It returns before its task is cancelled only when the store handed
  /// to ``init(session:retryInterval:)`` can never be read again
  /// (``Phase/reopenRequired(reason:)``).
  public func follow() async {
    followers += 1
    let follower = followers
    defer {
      // The store an opener opened goes with the follower that opened it.
      if case .opener = source, follower == followers { session = nil }
    }
    var waitFirst = false
    while !Task.isCancelled {
      if waitFirst {
        do { try await Task.sleep(for: retryInterval) } catch { return }
      }
      waitFirst = true
      guard let store = await open() else { continue }
      if case .opener = source { session = store }
      switch await run(store) {
      case .cancelled: return
      case .failed(let error, let showed):
        if SessionStorageError.Code.fileReplaced ~= error {
          guard case .opener = source else {
            phase = .reopenRequired(reason: "The store cannot read its file any more: \(error)")
            greeting = Greeting.unavailable
            return
          }
          // The path names another file now: open it at once, unless this store never
          // showed a state (the file keeps being replaced; wait between tries).
          if follower == followers { session = nil }
          waitFirst = !showed
          continue
        }
        unavailable(showed ? "The session feed stopped: \(error)" : "The session cannot be read: \(error)")
      }
    }
  }

  /// Signs out the active account through the store, off the main actor; a failure is shown
  /// in ``writeError``.
  /// The new state arrives through the feed like any other change.
  public func logOut() async {
    guard let session else {
      writeError = "Could not sign out: the session is not open"
      return
    }
    isSigningOut = true
    defer { isSigningOut = false }
    do {
      try await session.logOut()
      writeError = nil
    } catch {
      writeError = "Could not sign out: \(error)"
    }
  }

  /// The store to follow: the one handed in, or a new one from the opener (nil, with the
  /// phase saying why, when it cannot be opened now).
  private func open() async -> (any SessionRepository)? {
    switch source {
    case .store(let store): return store
    case .opener(let opener):
      do {
        return try await opener.open()
      } catch SessionStorageError.Code.notFound {
        phase = .noSessionYet
        greeting = Greeting.noSessionYet
        username = nil
        isLoggedIn = false
        lastChange = nil
      } catch {
        unavailable("The session cannot be opened: \(error)")
      }
      return nil
    }
  }

  /// Why ``run(_:)`` stopped following a store.
  private enum Ending {
    /// The task was cancelled.
    case cancelled
    /// A read failed; `showed` says whether the store showed a state before.
    case failed(any Error, showed: Bool)
  }

  /// Shows a snapshot of `store`, then each change after it, until the task is cancelled or
  /// a read fails. A `FeedError` (a history rewritten or compacted under the cursor) starts
  /// again from a new snapshot: at once, or after ``retryInterval`` when it comes again
  /// before any change was delivered, so that a log that keeps failing cannot keep the main
  /// actor busy.
  private func run(_ store: any SessionRepository) async -> Ending {
    var showed = false
    var recurring = 0  // `FeedError`s in a row with no change delivered between them
    while !Task.isCancelled {
      if recurring >= 2 {
        do { try await Task.sleep(for: retryInterval) } catch { return .cancelled }
      }
      let start: SessionSnapshotSubscription
      do {
        start = try store.snapshotAndChanges()
      } catch {
        return .failed(error, showed: showed)
      }
      var state = start.state
      show(state)
      lastChange = start.cursor == .zero ? nil : LastChange(snapshot: start)
      phase = .following
      showed = true
      do {
        for try await entry in start.changes {
          // The active account's state: a switch shows the newly active account, a change
          // of another account leaves the screen as it is.
          guard entry.change.isActive || entry.change.wasActive else { continue }
          state = entry.change.activeState(after: state, at: entry.time)
          show(state)
          lastChange = LastChange(entry: entry)
          recurring = 0
        }
        return .cancelled  // the iteration ends only when the task is cancelled
      } catch is FeedError {
        recurring += 1
      } catch {
        return .failed(error, showed: showed)
      }
    }
    return .cancelled
  }

  private func show(_ state: SessionState) {
    username = state.username
    isLoggedIn = state.isLoggedIn
    greeting = Greeting.text(username: state.username, isLoggedIn: state.isLoggedIn)
  }

  private func unavailable(_ reason: String) {
    phase = .unavailable(reason: reason)
    greeting = Greeting.unavailable
  }
}

/// Opens the store a ``ProfileViewModel`` follows, for a composition root that lets the view
/// model open it again by itself: when its file is replaced or deleted and recreated, and
/// until it exists at all (a read-only viewer started before the first write).
///
/// The closure is the composition root's: it names the path and the options. The view model
/// only calls it, so it still never builds a store itself.
///
/// ```swift
/// let opener = SessionOpener {
///   try SessionStore(path: path, options: .init(readOnly: true))
/// }
/// let model = ProfileViewModel(opener: opener)
/// ```
public struct SessionOpener: Sendable {
  /// How long the view model waits before it calls the opener again after the store could
  /// not be opened or read; one second by default, the store's safety-poll interval.
  public let retryInterval: Duration
  private let opening: @Sendable () async throws -> any SessionRepository

  /// An opener that calls `open`, off the caller's actor.
  /// - Parameters:
  ///   - retryInterval: how long to wait before trying again after a failure.
  ///   - open: opens the store; throws `SessionStorageError` with code `notFound` while
  ///     there is none yet (the view model then shows "no session yet").
  public init(
    retryInterval: Duration = .seconds(1),
    _ open: @escaping @Sendable () async throws -> any SessionRepository
  ) {
    self.retryInterval = retryInterval
    opening = open
  }

  /// Opens the store.
  /// - Throws: what the opener throws.
  public func open() async throws -> any SessionRepository { try await opening() }
}

/// Where a view model's store comes from: handed in by the composition root, or opened by
/// the view model through the composition root's ``SessionOpener`` when it needs one.
enum SessionSource {
  case store(any SessionRepository)
  case opener(SessionOpener)
}

/// Who made the change a screen shows, and when.
public struct LastChange: Sendable, Hashable {
  /// The feed position of the change.
  public let cursor: Cursor
  /// When the change committed.
  public let time: Date
  /// Who made it: a library writer's origin (`sessionctl`, an app's name) or `external`
  /// for any other client. Nil when the change came before the view model started
  /// following: a snapshot records when the state last changed, not who changed it.
  public let origin: String?

  /// The change `entry` delivered.
  init(entry: SessionEntry) {
    cursor = entry.cursor
    time = entry.time
    origin = entry.origin
  }

  /// The change a snapshot includes last: its cursor and the state's time, without an origin.
  init(snapshot: SessionSnapshotSubscription) {
    cursor = snapshot.cursor
    time = snapshot.state.updatedAt
    origin = nil
  }
}

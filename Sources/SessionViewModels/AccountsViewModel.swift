import Observation
import SessionStorage

/// An account switcher's state, following the roster live: every account, which one is
/// active, and the writes a switcher offers (switch, sign out one or all, remove).
///
/// Creating one opens and reads nothing; ``follow()`` reads the roster and its cursor in one
/// transaction, then folds every change after that cursor into it
/// (`SessionRoster.applying(_:)`), so the list never shows a roster that was never
/// committed, whichever process or tool made the change. It never stops at a dead end: a
/// history rewritten or compacted under it is read again from a new roster; a read that
/// fails is tried again every ``retryInterval``.
///
/// ```swift
/// List(model.accounts, id: \.id) { account in … }
///   .task { await model.follow() }
/// ```
@Observable
@MainActor
public final class AccountsViewModel: ObservableViewModel {
  /// What the list shows: the roster, or why not.
  public enum Phase: Sendable, Equatable {
    /// ``AccountsViewModel/follow()`` has not read the roster yet.
    case idle
    /// The list shows the roster and follows each change.
    case following
    /// The roster cannot be read now (the reason says why); it is read again every
    /// ``AccountsViewModel/retryInterval``.
    case unavailable(reason: String)
  }

  /// What the list shows.
  public private(set) var phase = Phase.idle
  /// Every account, in the order they joined (empty until the first read).
  public private(set) var accounts: [Account] = []
  /// The active account's identifier; nil when none is active (or before the first read).
  public private(set) var activeID: AccountID?
  /// Why the last write failed (an account removed meanwhile, a lock held too long); nil
  /// after one succeeds.
  public private(set) var writeError: String?
  /// Whether a write is in progress.
  public private(set) var isWriting = false
  /// How long ``follow()`` waits before it reads the roster again after a failure.
  public let retryInterval: Duration

  /// Where the store comes from: handed in, or opened by ``follow()``.
  @ObservationIgnored private let source: SessionSource
  /// The store the writes go through: the one handed in, or the one the running
  /// ``follow()`` opened (nil while none is open).
  @ObservationIgnored private var session: (any SessionRepository)?

  /// Follows `session` once ``follow()`` runs; opens and reads nothing here.
  public init(session: any SessionRepository, retryInterval: Duration = .seconds(1)) {
    source = .store(session)
    self.session = session
    self.retryInterval = retryInterval
  }

  /// Follows the store `opener` opens once ``follow()`` runs; opens nothing here. The store
  /// is released when ``follow()`` returns.
  public init(opener: SessionOpener) {
    source = .opener(opener)
    session = nil
    retryInterval = opener.retryInterval
  }

  /// The active account, or nil.
  public var active: Account? { accounts.first { $0.id == activeID } }

  /// Shows the roster and follows every change until the calling task is cancelled. Start
  /// it with the view: `.task { await model.follow() }`.
  public func follow() async {
    defer { if case .opener = source { session = nil } }
    var waitFirst = false
    var recurring = 0  // `FeedError`s in a row with no change delivered between them
    while !Task.isCancelled {
      if waitFirst || recurring >= 2 {
        do { try await Task.sleep(for: retryInterval) } catch { return }
      }
      waitFirst = false
      do {
        let session: any SessionRepository
        switch source {
        case .store(let store): session = store
        case .opener(let opener):
          if let open = self.session { session = open } else { session = try await opener.open() }
        }
        self.session = session
        var roster = try session.roster()
        let changes = try session.changes(from: .after(roster.cursor))
        show(roster)
        phase = .following
        for try await entry in changes {
          roster = roster.applying(entry)
          show(roster)
          recurring = 0
        }
        return  // the iteration ends only when the task is cancelled
      } catch is FeedError {
        recurring += 1
      } catch {
        phase = .unavailable(reason: "The accounts cannot be read: \(error)")
        if case .opener = source { session = nil }  // opened again at the next try
        waitFirst = true
      }
    }
  }

  /// Makes the account named `username` the active one.
  public func switchTo(_ username: String) async {
    await writing("Could not switch to \(username)") { try await $0.switchTo(username) }
  }

  /// Signs out the account named `username`; it stays in the list.
  public func logOut(_ username: String) async {
    await writing("Could not sign out \(username)") { try await $0.logOut(username) }
  }

  /// Signs out every account.
  public func logOutAll() async {
    await writing("Could not sign out") { try await $0.logOutAll() }
  }

  /// Removes the account named `username` from the roster; removing the active one leaves
  /// none active.
  public func remove(_ username: String) async {
    await writing("Could not remove \(username)") { try await $0.remove(username) }
  }

  /// Runs `write` off the main actor; a failure lands in ``writeError``. The new roster
  /// arrives through the feed like any other change.
  private func writing(_ failure: String, _ write: (any SessionRepository) async throws -> Void) async {
    guard let session else {
      writeError = "\(failure): the accounts are not open"
      return
    }
    isWriting = true
    defer { isWriting = false }
    do {
      try await write(session)
      writeError = nil
    } catch {
      writeError = "\(failure): \((error as? SessionStorageError)?.message ?? "\(error)")"
    }
  }

  private func show(_ roster: SessionRoster) {
    if accounts != roster.accounts { accounts = roster.accounts }
    if activeID != roster.activeID { activeID = roster.activeID }
  }
}

import Observation
import SessionStorage

/// A profile screen's state, following the session live: the greeting and login state
/// change as commits arrive, from this process, other processes or the sqlite3 shell.
///
/// The first state comes from one read (a snapshot: username and login state committed
/// together), and the subscription continues from that snapshot's cursor, so the screen
/// never shows a state that was never committed. Its subscription starts in the
/// initializer and ends when the view model is released: no task outlives it.
@Observable
@MainActor
public final class ProfileViewModel {
  /// "Hello, <username>", what ``Greeting`` says for a signed-out session, or
  /// ``Greeting/unavailable`` while the session cannot be read.
  public private(set) var greeting: String
  /// The current username, if any.
  public private(set) var username: String?
  /// Whether the user is signed in.
  public private(set) var isLoggedIn: Bool
  /// Why the screen does not show the session: its state could not be read, or its feed
  /// stopped. Nil while the fields follow the session.
  public private(set) var readError: String?
  /// Why the last sign-out failed; nil after one succeeds.
  public private(set) var writeError: String?
  /// Whether a sign-out is in progress (it may wait for another process's write lock).
  public private(set) var isSigningOut = false

  private let session: any SessionRepository
  @ObservationIgnored private var following: Task<Void, Never>?

  /// Shows `session`'s state at once (one read) and follows every change after it.
  public init(session: any SessionRepository) {
    self.session = session
    let start: SessionSnapshotSubscription
    do {
      start = try session.snapshotAndChanges()
    } catch {
      greeting = Greeting.unavailable
      username = nil
      isLoggedIn = false
      readError = "The session cannot be read: \(error)"
      return
    }
    greeting = Greeting.text(username: start.state.username, isLoggedIn: start.state.isLoggedIn)
    username = start.state.username
    isLoggedIn = start.state.isLoggedIn
    let values = start.values
    following = Task { [weak self] in
      do {
        for try await state in values {
          guard let self else { return }
          self.show(state)
        }
      } catch {
        self?.stopped(error)
      }
    }
  }

  deinit { following?.cancel() }

  /// Signs out through the repository, off the main actor; a failure is shown in
  /// ``writeError``. The new state arrives through the feed like any other change.
  public func logOut() async {
    isSigningOut = true
    defer { isSigningOut = false }
    do {
      try await session.logOut()
      writeError = nil
    } catch {
      writeError = "Could not sign out: \(error)"
    }
  }

  private func show(_ state: SessionState) {
    username = state.username
    isLoggedIn = state.isLoggedIn
    greeting = Greeting.text(username: state.username, isLoggedIn: state.isLoggedIn)
  }

  private func stopped(_ error: any Error) {
    greeting = Greeting.unavailable
    readError = "The session feed stopped: \(error)"
  }
}

import Observation
import SessionStorage

/// A profile screen's state, following the session live: the greeting and login state
/// change as commits arrive, from this process, other processes or the sqlite3 shell.
///
/// Its subscription starts in the initializer and ends when the view model is released:
/// no task outlives it.
@Observable
@MainActor
public final class ProfileViewModel {
  /// "Hello, <username>", or what ``Greeting`` says for a signed-out session.
  public private(set) var greeting: String
  /// The current username, if any.
  public private(set) var username: String?
  /// Whether the user is signed in.
  public private(set) var isLoggedIn: Bool
  /// The last failure (of a write, or of the feed), for the screen to show; nil when all is well.
  public private(set) var lastError: String?

  private let session: any SessionRepository
  @ObservationIgnored private var following: Task<Void, Never>?

  /// Shows `session`'s state at once and follows every change after it.
  public init(session: any SessionRepository) {
    self.session = session
    username = session.username
    isLoggedIn = session.isLoggedIn
    greeting = Greeting.text(username: session.username, isLoggedIn: session.isLoggedIn)
    let values = session.values()
    following = Task { [weak self] in
      do {
        for try await state in values {
          guard let self else { return }
          self.show(state)
        }
      } catch {
        self?.lastError = "The session feed stopped: \(error)"
      }
    }
  }

  deinit { following?.cancel() }

  /// Signs out through the repository; a failure is shown in ``lastError``.
  public func logOut() {
    do {
      try session.logout()
      lastError = nil
    } catch {
      lastError = "Could not sign out: \(error)"
    }
  }

  private func show(_ state: SessionState) {
    username = state.username
    isLoggedIn = state.isLoggedIn
    greeting = Greeting.text(username: state.username, isLoggedIn: state.isLoggedIn)
  }
}

import Observation
import SessionStorage

/// The text a screen shows for a session, shared by the view models.
///
/// - Signed in: "Hello, alice".
/// - Signed in without a username (only possible through the sqlite3 shell): "Hello!".
/// - Signed out: "Signed out", whatever username is kept.
/// - The session cannot be read: "Session unavailable" (``unavailable``).
/// - Not read yet: "Loading…" (``loading``).
/// - The store does not exist yet: "No session yet" (``noSessionYet``).
public enum Greeting {
  /// What a screen shows while the session cannot be read: never "Signed out", which
  /// would be a guess.
  public static let unavailable = "Session unavailable"

  /// What a screen shows before its view model has read the session (before
  /// `follow()` runs).
  public static let loading = "Loading…"

  /// What a screen shows while the store does not exist yet: its file is created by the
  /// first write, and a read-only viewer may start before it.
  public static let noSessionYet = "No session yet"

  /// The greeting for a username and login state.
  /// - Parameters:
  ///   - username: the username, or nil when there is none.
  ///   - isLoggedIn: whether the user is signed in.
  public static func text(username: String?, isLoggedIn: Bool) -> String {
    guard isLoggedIn else { return "Signed out" }
    guard let username else { return "Hello!" }
    return "Hello, \(username)"
  }
}

/// Greets whoever the injected session names, once: it needs only `SessionProviding`,
/// so any two-line struct can stand in for the store in a test or a preview.
@Observable
@MainActor
public final class GreetingViewModel: ObservableViewModel {
  /// "Hello, <username>", or what ``Greeting`` says for a signed-out session.
  public private(set) var greeting: String

  /// Reads the greeting from `session`.
  public init(session: any SessionProviding) {
    greeting = Greeting.text(username: session.username, isLoggedIn: session.isLoggedIn)
  }
}

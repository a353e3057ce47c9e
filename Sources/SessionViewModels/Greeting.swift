import Observation
import SessionStorage

/// The text a screen shows for a session, shared by the view models.
///
/// - Signed in: "Hello, alice".
/// - Signed in without a username (only possible through the sqlite3 shell): "Hello!".
/// - Signed out: "Signed out", whatever username is kept.
/// - The session cannot be read: "Session unavailable" (``unavailable``).
public enum Greeting {
  /// What a screen shows while the session cannot be read: never "Signed out", which
  /// would be a guess.
  public static let unavailable = "Session unavailable"

  /// The greeting for a username and login state.
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
public final class GreetingViewModel {
  /// "Hello, <username>", or what ``Greeting`` says for a signed-out session.
  public private(set) var greeting: String

  /// Reads the greeting from `session`.
  public init(session: any SessionProviding) {
    greeting = Greeting.text(username: session.username, isLoggedIn: session.isLoggedIn)
  }
}

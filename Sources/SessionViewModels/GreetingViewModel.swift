import Observation
import SessionStorage

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

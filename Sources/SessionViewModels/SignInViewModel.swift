import Observation
import SessionStorage

/// A sign-in screen's state: the username as typed, what is wrong with it by the library's
/// rules (`Username`), and the sign-in itself.
///
/// The username is checked as it is typed (``usernameProblem``), with the rules the store
/// applies to every write, so the screen says what is wrong before anything is written:
/// `invalid username: it contains the invisible format character U+200B (ZERO WIDTH SPACE)
/// at position 6`. Creating one opens and reads nothing.
@Observable
@MainActor
public final class SignInViewModel: ObservableViewModel {
  /// The username as typed; bind a text field to it.
  public var username = ""
  /// Whether ``signIn()`` is in progress (it may wait for another process's write lock).
  public private(set) var isSigningIn = false
  /// Why the last sign-in failed (a refused username, a read-only store, a lock held too
  /// long); nil after one succeeds.
  public private(set) var signInError: String?
  /// The username the last successful sign-in signed in, as stored (in Unicode NFC).
  public private(set) var signedInAs: String?

  /// The store handed in, or the opener that opens it for each sign-in.
  @ObservationIgnored private let source: SessionSource

  /// Signs in through `session`, built by the composition root; opens and reads nothing here.
  public init(session: any SessionRepository) { source = .store(session) }

  /// Signs in through the store `opener` opens at each ``signIn()``; opens nothing here.
  /// (A store already open in the process shares its connections with the new instance.)
  public init(opener: SessionOpener) { source = .opener(opener) }

  /// What is wrong with ``username`` by the rules of `Username`, as a sentence for the
  /// screen; nil when it may sign in, and while nothing is typed (an empty field is not an
  /// error yet; ``canSignIn`` is false).
  public var usernameProblem: String? {
    guard !username.isEmpty else { return nil }
    return Self.problem(with: username)
  }

  /// Whether ``signIn()`` would write: a valid username, and no sign-in under way.
  public var canSignIn: Bool { !isSigningIn && !username.isEmpty && Self.problem(with: username) == nil }

  /// Checks ``username`` and signs in as it, off the main actor: an account of that name
  /// signs in and becomes the active one, or a new account joins the roster, signed in and
  /// active; the other accounts stay signed in. A refusal or failure lands
  /// in ``signInError``; the new state reaches the screens that follow the session through
  /// the feed.
  /// - Returns: whether the session is signed in as the username now (also when it was
  ///   already).
  @discardableResult
  public func signIn() async -> Bool {
    let name: String
    do {
      name = try Username.validated(username)
    } catch {
      signInError = Self.sentence(error)
      return false
    }
    isSigningIn = true
    defer { isSigningIn = false }
    do {
      let store =
        switch source {
        case .store(let store): store
        case .opener(let opener): try await opener.open()
        }
      try await store.logIn(as: name)
      signInError = nil
      signedInAs = name
      return true
    } catch {
      signInError = "Could not sign in: \(Self.sentence(error))"
      return false
    }
  }

  /// The rule `raw` breaks, or nil.
  private static func problem(with raw: String) -> String? {
    do {
      _ = try Username.validated(raw)
      return nil
    } catch {
      return sentence(error)
    }
  }

  /// A library error's message without the file's path (which a screen does not show);
  /// any other error as it describes itself.
  private static func sentence(_ error: any Error) -> String {
    (error as? SessionStorageError)?.message ?? "\(error)"
  }
}

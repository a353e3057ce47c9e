/// The narrowest view of a session: who is signed in. Hand this to a view model that only
/// reads; a two-line struct conforms, which makes such a view model trivial to test.
public protocol SessionProviding {
  /// The username, or nil when there is none.
  var username: String? { get }
  /// Whether the user is signed in.
  var isLoggedIn: Bool { get }
}

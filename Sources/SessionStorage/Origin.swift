/// The rules for the name a store records as the origin of its writes, the same for every
/// store (``SessionStore/Options/origin``, ``InMemorySessionStore/origin``).
package enum Origin {
  /// The origin of every change made by a client other than this library (the sqlite3
  /// shell, another program); no store may take it.
  package static let external = "external"

  /// The most characters an origin may have.
  static let maximumLength = 64

  /// Throws `invalidOrigin` unless `origin` is 1 to 64 characters, none of them a control
  /// character, and not `external`.
  package static func validate(_ origin: String) throws {
    guard !origin.isEmpty, origin.count <= maximumLength, origin != external,
      origin.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
    else {
      throw SessionStorageError(
        .invalidOrigin,
        "origin '\(origin.escapedForTerminal)' must be 1 to \(maximumLength) printable characters and not "
          + "'\(external)'")
    }
  }
}

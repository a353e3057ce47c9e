#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One of the three writes, with its username already validated.
package enum SessionWrite: Sendable {
  case login(String)
  case logout
  case rename(String)

  /// Validates `username` and makes a login.
  package static func login(username: String) throws -> SessionWrite {
    .login(try Username.validated(username))
  }

  /// Validates `username` and makes a rename.
  package static func rename(to username: String) throws -> SessionWrite {
    .rename(try Username.validated(username))
  }

  /// The state after this write, or nil when it would change nothing.
  package func applied(to state: SessionState) -> (username: String?, isLoggedIn: Bool)? {
    let after: (username: String?, isLoggedIn: Bool)
    switch self {
    case .login(let name): after = (name, true)
    case .logout: after = (state.username, false)
    case .rename(let name): after = (name, state.isLoggedIn)
    }
    return after == (state.username, state.isLoggedIn) ? nil : after
  }
}

/// What a write did, as its own transaction saw it: the entry it committed, or the state
/// and cursor it found when it changed nothing. A response built from it is one atomic
/// observation: no other writer's commit can fall between the write and what it reports.
package enum WriteOutcome: Sendable, Equatable {
  /// The write committed this entry.
  case committed(SessionEntry)
  /// The write changed nothing: this is the state (and its cursor) it found, read in its
  /// own transaction.
  case unchanged(SessionSnapshot)

  /// The committed entry, or nil when the write changed nothing.
  package var entry: SessionEntry? {
    if case .committed(let entry) = self { entry } else { nil }
  }
}

/// The rules for the name a store records as the origin of its writes, the same for every
/// store (``SessionStore/FileOptions/origin`` and the other backends' origins).
package enum Origin {
  /// The origin of every change made by a client other than this library (the sqlite3
  /// shell, `psql`, another program); no store may take it.
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

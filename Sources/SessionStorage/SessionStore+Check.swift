import FeedKit

extension SessionStore {
  /// One verification `check` ran, and what it found.
  public struct CheckItem: Sendable, Equatable {
    /// A short name: `integrity`, `migrations`, `state`, `continuity`, `username`.
    public var name: String
    /// Whether it passed.
    public var passed: Bool
    /// What was found, in a sentence.
    public var detail: String
  }

  /// Verifies the file without writing: SQLite's integrity check, the migration records,
  /// that `session` agrees with the newest change's `after`, that cursors have no hole
  /// above the compaction point, and that the stored username meets the rules.
  public func check() throws -> [CheckItem] {
    try log.reader.withLock { connection in
      try connection.transaction(.deferred) { () throws -> [CheckItem] in
        var items: [CheckItem] = []
        let integrity = try connection.scalarText("PRAGMA integrity_check") ?? "no answer"
        items.append(
          CheckItem(
            name: "integrity", passed: integrity == "ok", detail: "PRAGMA integrity_check: \(integrity)"))

        let records = try Migrator.records(on: connection)
        let userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
        let pending = try Migrator.pending(on: connection)
        items.append(
          CheckItem(
            name: "migrations", passed: pending.isEmpty && userVersion == records.count,
            detail: "\(records.count) applied, checksums match, user_version \(userVersion)"
              + (pending.isEmpty ? "" : ", \(pending.count) pending")))

        let state = try SessionLog.state(on: connection)
        if let after = try SessionLog.newest(on: connection)?.after {
          let agrees = after.username == state.username && after.isLoggedIn == state.isLoggedIn
          items.append(
            CheckItem(
              name: "state", passed: agrees,
              detail: agrees
                ? "session agrees with the newest change"
                : "session (\(state.username ?? "no username"), \(state.isLoggedIn ? "signed in" : "signed out")) "
                  + "differs from the newest change (\(after.username ?? "no username"), \(after.isLoggedIn ? "signed in" : "signed out"))"
            ))
        } else {
          items.append(CheckItem(name: "state", passed: true, detail: "no change kept to compare with"))
        }

        let bounds = try SessionLog.bounds(on: connection)
        let count = try connection.scalarInt("SELECT count(*) FROM session_changes") ?? 0
        let expected = bounds.oldest.map { bounds.head.rawValue - $0.rawValue + 1 } ?? 0
        items.append(
          CheckItem(
            name: "continuity", passed: count == expected,
            detail: count == expected
              ? "cursors \(bounds.firstAvailable)…\(bounds.head) have no hole (\(count) kept)"
              : "\(expected - count) cursor(s) missing between \(bounds.firstAvailable) and \(bounds.head)"))

        var usernameDetail = "username is valid"
        do {
          if let name = try connection.scalarText("SELECT username FROM session WHERE id = 1"),
            try Username.validated(name) != name
          {
            usernameDetail = "username is not in Unicode NFC"
          }
        } catch let error as SessionStorageError {
          usernameDetail = "stored " + error.message
        }
        items.append(
          CheckItem(name: "username", passed: usernameDetail == "username is valid", detail: usernameDetail))
        return items
      }
    }
  }
}

import FeedKit

extension SessionStore {
  /// One verification `check` ran, and what it found.
  public struct CheckItem: Sendable, Equatable {
    /// A short name: `integrity`, `migrations`, `schema`, `state`, `continuity`, `cursors`,
    /// `username`.
    public var name: String
    /// Whether it passed.
    public var passed: Bool
    /// What was found, in a sentence.
    public var detail: String
  }

  /// Verifies the file without writing: SQLite's integrity check, the migration records,
  /// that the schema is exactly the one the applied migrations create, that `session` agrees with the newest change's `after`, that cursors have no hole
  /// above the compaction point and lie between 1 and the largest integer, and that the
  /// stored username meets the rules.
  ///
  /// Each verification runs on its own: one that cannot run (a table edited away by hand)
  /// fails with SQLite's reason, and the others still run.
  public func check() throws -> [CheckItem] {
    try log.reader.withLock { connection in
      try connection.transaction(.deferred) { () throws -> [CheckItem] in
        func item(_ name: String, _ body: () throws -> (passed: Bool, detail: String)) -> CheckItem {
          do {
            let (passed, detail) = try body()
            return CheckItem(name: name, passed: passed, detail: detail)
          } catch let error as SessionStorageError {
            return CheckItem(name: name, passed: false, detail: "could not check: \(error.message)")
          } catch {
            return CheckItem(name: name, passed: false, detail: "could not check: \(error)")
          }
        }
        return [
          item("integrity") {
            let integrity = try connection.scalarText("PRAGMA integrity_check") ?? "no answer"
            return (integrity == "ok", "PRAGMA integrity_check: \(integrity)")
          },
          item("migrations") { try Self.checkMigrations(on: connection) },
          item("schema") {
            let applied = try Migrator.records(on: connection).count
            let differences = try Schema.differences(on: connection, applied: applied)
            guard differences.isEmpty else { return (false, Schema.message(differences)) }
            return (
              true, "tables, indexes and triggers are the ones the \(applied) applied migration(s) create"
            )
          },
          item("state") { try Self.checkState(on: connection) },
          item("continuity") { try Self.checkContinuity(on: connection) },
          item("cursors") {
            guard let problem = try SessionLog.cursorProblem(on: connection) else {
              return (true, "every cursor is at least 1 and below the largest integer")
            }
            return (false, problem)
          },
          item("username") { try Self.checkUsername(on: connection) },
        ]
      }
    }
  }

  private static func checkMigrations(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let records = try Migrator.records(on: connection)
    let userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
    let pending = try Migrator.pending(on: connection, verifyingSchema: false)
    return (
      pending.isEmpty && userVersion == records.count,
      "\(records.count) applied, checksums match, user_version \(userVersion)"
        + (pending.isEmpty ? "" : ", \(pending.count) pending")
    )
  }

  private static func checkState(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let state = try SessionLog.state(on: connection)
    guard let after = try SessionLog.newest(on: connection)?.after else {
      return (true, "no change kept to compare with")
    }
    let agrees = after.username == state.username && after.isLoggedIn == state.isLoggedIn
    return (
      agrees,
      agrees
        ? "session agrees with the newest change"
        : "session (\(state.username ?? "no username"), \(state.isLoggedIn ? "signed in" : "signed out")) "
          + "differs from the newest change (\(after.username ?? "no username"), \(after.isLoggedIn ? "signed in" : "signed out"))"
    )
  }

  /// Counts the cursors missing between the oldest kept and the head. Both come from the
  /// file, where the shell can store any Int64: the span is computed without overflow.
  private static func checkContinuity(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let bounds = try SessionLog.bounds(on: connection)
    let count = try connection.scalarInt("SELECT count(*) FROM session_changes") ?? 0
    var missing: UInt64 = 0
    if let oldest = bounds.oldest, count > 0 {
      // head ≥ oldest, so the wrapping difference is the distance, read as unsigned.
      let span = UInt64(bitPattern: bounds.head.rawValue &- oldest.rawValue)
      let (difference, overflow) = span.subtractingReportingOverflow(UInt64(count - 1))
      missing = overflow ? 0 : difference
    }
    return (
      missing == 0,
      missing == 0
        ? "cursors \(bounds.firstAvailable)…\(bounds.head) have no hole (\(count) kept)"
        : "\(missing) cursor(s) missing between \(bounds.firstAvailable) and \(bounds.head)"
    )
  }

  private static func checkUsername(on connection: Connection) throws -> (passed: Bool, detail: String) {
    do {
      if let name = try connection.scalarText("SELECT username FROM session WHERE id = 1"),
        try Username.validated(name) != name
      {
        return (false, "username is not in Unicode NFC")
      }
    } catch let error as SessionStorageError where error.code == .invalidUsername || error.code == .corrupt {
      return (false, "stored " + error.message)
    }
    return (true, "username is valid")
  }
}

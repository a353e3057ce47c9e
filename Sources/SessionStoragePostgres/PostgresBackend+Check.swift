import FeedKit
import SessionStorage

extension PostgresBackend {
  /// Verifies the store without writing, in one read-only transaction: the migration
  /// records and their checksums, that the functions and triggers are the migrations' own
  /// (their bodies, settings and firing modes, not only their names), that the
  /// session row is the state the newest change left, that cursors have no hole between
  /// the oldest kept and the head, that every cursor lies between 1 and the largest
  /// integer, and that the stored username meets the rules. (SQLite's integrity check and
  /// time formats have no PostgreSQL counterpart: the server keeps its own pages and
  /// `timestamptz` holds only times.)
  ///
  /// Each verification runs on its own: one that cannot run fails with the server's
  /// reason, and the others still run.
  func check() throws -> [CheckResult] {
    try log.read(refusing: false) { connection in
      try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      defer { try? connection.execute("ROLLBACK") }
      // Each verification in a savepoint: one the server fails aborts only its own part
      // of the transaction, which is rolled back before the next one starts.
      func item(_ check: StoreCheck, _ body: () throws -> (passed: Bool, detail: String)) -> CheckResult {
        .running(check) {
          do {
            try connection.execute("SAVEPOINT item")
            let result = try body()
            try connection.execute("RELEASE SAVEPOINT item")
            return result
          } catch {
            try? connection.execute("ROLLBACK TO SAVEPOINT item")
            throw error
          }
        }
      }
      return [
        item(.migrations) {
          let pending = try PostgresMigrator.inspect(connection)
          let applied = PostgresMigrator.known.count - pending.count
          return (
            pending.isEmpty,
            "\(applied) applied, checksums match" + (pending.isEmpty ? "" : ", \(pending.count) pending")
          )
        },
        item(.schema) { try Self.checkSchema(on: connection) },
        item(.state) { try Self.checkState(on: connection) },
        item(.continuity) { try Self.checkContinuity(on: connection) },
        item(.cursors) {
          let bounds = try Self.bounds(on: connection)
          if bounds.head.next == nil {
            return (false, "the head reached the largest integer (\(bounds.head)): it was set by hand")
          }
          if let oldest = bounds.oldest, oldest.value < 1 {
            return (false, "cursor \(oldest) is below 1, where the library's cursors start")
          }
          return (true, "every cursor is at least 1 and below the largest integer")
        },
        item(.username) {
          guard let name = try connection.scalar("SELECT username FROM ONLY session WHERE id = 1") else {
            return (true, "no username")
          }
          do {
            guard try Username.validated(name).utf8.elementsEqual(name.utf8) else {
              // A library rename to the NFC form changes only bytes, which every store
              // treats as no change: the repair is psql's, recorded as a change without events.
              return (
                false,
                "username is not in Unicode NFC; repair it in psql with UPDATE "
                  + "\(connection.place.quotedSchema).session SET username = normalize(username, NFC) WHERE id = 1"
              )
            }
          } catch let error as SessionStorageError where error.code == .invalidUsername {
            return (false, "stored " + error.message)
          }
          return (true, "username is valid")
        },
      ]
    }
  }

  private static func bounds(on connection: PQConnection) throws -> FeedBounds {
    guard let row = try connection.query(PostgresTables.boundsSQL).rows.first else {
      throw SessionStorageError(.notFound, "the session row is missing", path: connection.place.described)
    }
    return PostgresTables.bounds(row)
  }

  /// The schema's functions, triggers and tables against the migrations' (``PostgresSchema``).
  private static func checkSchema(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    let problems = try PostgresSchema.problems(on: connection)
    guard problems.isEmpty else {
      return (false, problems.joined(separator: "; ") + ". " + PostgresSchema.repair(connection.place))
    }
    return (
      true,
      "the functions, triggers and tables are the ones of the applied migrations (bodies, settings, firing modes)"
    )
  }

  /// The session row must be the state the newest change left, when that change is kept.
  private static func checkState(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    guard let session = try connection.query(PostgresTables.snapshotSQL).rows.first else {
      return (false, "the session row is missing")
    }
    let (state, head) = PostgresTables.snapshot(session)
    guard head != .zero else { return (true, "session is as created; no change was ever recorded") }
    guard let row = try connection.query(PostgresTables.entrySQL, [String(head.value)]).rows.first else {
      return (true, "the newest change (cursor \(head)) was compacted away; nothing to compare with")
    }
    let newest = PostgresTables.entry(row).after
    guard newest.username == state.username, newest.isLoggedIn == state.isLoggedIn else {
      return (
        false,
        "session (\(state)) is not the state the newest change left (\(newest), cursor \(head)): "
          + "it was changed without a feed entry (the session_feed trigger was disabled)"
      )
    }
    return (true, "session agrees with the newest change (cursor \(head))")
  }

  /// Counts the cursors missing between the oldest kept and the head.
  private static func checkContinuity(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    let bounds = try bounds(on: connection)
    let row = try connection.query("SELECT count(*), max(seq) FROM ONLY session_changes").rows.first
    let count = PostgresTables.integer(row?[0] ?? nil)
    if let newest = row?[1] ?? nil, let value = Int64(newest), value > bounds.head.value {
      return (
        false,
        "the feed holds cursor \(value) beyond the head \(bounds.head): the head was moved back by hand, "
          + "and cursors would be handed out again"
      )
    }
    guard let oldest = bounds.oldest, count > 0 else {
      return (true, "no change kept; the next cursor is \(bounds.head.next.map(String.init) ?? "none")")
    }
    let span = UInt64(bitPattern: bounds.head.value &- oldest.value)
    let (missing, overflow) = span.subtractingReportingOverflow(UInt64(count - 1))
    guard overflow || missing == 0 else {
      return (false, "\(missing) cursor(s) missing between \(oldest) and \(bounds.head)")
    }
    return (true, "cursors \(oldest)…\(bounds.head) have no hole (\(count) kept)")
  }
}

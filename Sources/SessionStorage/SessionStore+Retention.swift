import FeedKit
internal import SystemKit

/// How long the feed keeps its entries: the policy stored in the file
/// (`session_retention`), applied by every write in the same transaction as the write,
/// whoever makes it — this library, `sessionctl`, or the `sqlite3` shell.
///
/// An entry is deleted once either limit says so: it is not among the newest
/// ``keepLast`` entries, or it is older than ``maxAge``. `nil` means no limit; a policy
/// with neither limit (``off``) keeps everything until someone compacts.
public struct Retention: Sendable, Hashable, CustomStringConvertible {
  /// How many of the newest entries to keep (at least 1), or nil for no count limit.
  public var keepLast: Int?
  /// How old an entry may get (at least one second, kept to the millisecond), or nil for no
  /// age limit.
  public var maxAge: Duration?

  /// A policy; both limits default to none.
  public init(keepLast: Int? = nil, maxAge: Duration? = nil) {
    self.keepLast = keepLast
    self.maxAge = maxAge
  }

  /// No limit: the feed grows until someone compacts.
  public static let off = Retention()

  /// Whether neither limit is set.
  public var isOff: Bool { keepLast == nil && maxAge == nil }

  /// `keep last 100, max age 30d`, or `off`.
  public var description: String {
    if isOff { return "off" }
    var parts: [String] = []
    if let keepLast { parts.append("keep last \(keepLast)") }
    if let maxAge { parts.append("max age \(Retention.format(maxAge))") }
    return parts.joined(separator: ", ")
  }

  /// A duration in the largest of `d`, `h`, `m`, `s` that divides it, else in milliseconds.
  public static func format(_ duration: Duration) -> String {
    let ms = duration.milliseconds
    if ms == 0 { return "0s" }
    for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
    where ms % size == 0 {
      return "\(ms / size)\(unit)"
    }
    return "\(ms)ms"
  }

  /// Throws `invalidArgument` for a count below 1 or an age below one second: the entry
  /// a write just made must survive the write.
  func validate() throws {
    if let keepLast, keepLast < 1 {
      throw SessionStorageError(
        .invalidArgument, "the number of entries to keep must be 1 or more, not \(keepLast)")
    }
    if let maxAge, maxAge < .seconds(1) {
      throw SessionStorageError(
        .invalidArgument, "the maximum age must be at least one second, not \(Retention.format(maxAge))")
    }
  }
}

extension SessionStore {
  /// The retention policy stored in the file.
  public func retention() throws -> Retention {
    try log.reader.withLock { connection in
      try connection.query("SELECT keep_last, max_age_ms FROM session_retention WHERE id = 1") { statement in
        guard try statement.step() else { return .off }
        return Retention(
          keepLast: statement.isNull(at: 0) ? nil : Int(clamping: statement.int64(at: 0)),
          maxAge: statement.isNull(at: 1) ? nil : .milliseconds(statement.int64(at: 1)))
      }
    }
  }

  /// Stores `policy` in the file, for every writer of it, and applies it at once.
  /// - Returns: what applying it deleted.
  /// - Throws: `invalidArgument` for `keepLast` below 1 or `maxAge` below one second.
  @discardableResult
  public func setRetention(_ policy: Retention) throws -> Compaction {
    try policy.validate()
    let keep: SQLiteValue = policy.keepLast.map { .integer(Int64($0)) } ?? .null
    let age: SQLiteValue = policy.maxAge.map { .integer($0.milliseconds) } ?? .null
    var deletes: [(String, [SQLiteValue])] = [
      ("DELETE FROM session_changes WHERE seq <= (SELECT max(seq) FROM session_changes) - ?", [keep])
    ]
    if policy.maxAge != nil { deletes.append((Self.olderThanSQL, [age])) }
    return try maintain(
      first: ("UPDATE session_retention SET keep_last = ?, max_age_ms = ? WHERE id = 1", [keep, age]),
      deleting: deletes)
  }

  /// Deletes the oldest entries up to the first one younger than `age` (by the time each
  /// was recorded; a clock stepped back keeps entries rather than leave a hole).
  /// - Throws: `invalidArgument` for a negative age.
  @discardableResult
  public func compact(olderThan age: Duration) throws -> Compaction {
    try SessionStorageError.requireNonNegative(age, "the age")
    return try maintain(Self.olderThanSQL, [.integer(age.milliseconds)])
  }

  /// Deletes the oldest entries before the first one at most `?` milliseconds old; all of
  /// them when none is.
  static let olderThanSQL = """
    DELETE FROM session_changes WHERE seq <= coalesce(
      (SELECT seq FROM session_changes
       WHERE at >= strftime('%Y-%m-%dT%H:%M:%fZ', julianday('now') - ?1 / 86400000.0)
       ORDER BY seq LIMIT 1) - 1,
      (SELECT max(seq) FROM session_changes))
    """
}

extension SessionStorageError {
  package static func requireNonNegative(_ duration: Duration, _ name: String) throws {
    guard duration >= .zero else {
      throw SessionStorageError(.invalidArgument, "\(name) must be 0 or more, not \(duration)")
    }
  }
}

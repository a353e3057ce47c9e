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
  /// How old an entry may get (at least one second, at most ``maximumAge``, kept to the
  /// millisecond), or nil for no age limit.
  public var maxAge: Duration?

  /// A policy; both limits default to none.
  public init(keepLast: Int? = nil, maxAge: Duration? = nil) {
    self.keepLast = keepLast
    self.maxAge = maxAge
  }

  /// No limit: the feed grows until someone compacts.
  public static let off = Retention()

  /// The largest age ``maxAge`` and ``SessionStore/compact(olderThan:)`` take: 719,528
  /// days, the span from 0000-01-01 to 1970-01-01.
  ///
  /// An age is a cutoff computed by SQLite's date functions, which represent the years 0000
  /// to 9999: counted back from any clock after 1970, this age's cutoff is such a date.
  /// Beyond it the cutoff SQLite computes is undefined (it is NULL once it falls before
  /// the Julian day 0), so larger ages are refused, not clamped.
  public static let maximumAge = Duration.seconds(719_528 * 86_400)

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
  package static func format(_ duration: Duration) -> String {
    let ms = duration.milliseconds
    if ms == 0 { return "0s" }
    for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
    where ms % size == 0 {
      return "\(ms / size)\(unit)"
    }
    return "\(ms)ms"
  }

  /// Throws `invalidArgument` for a count below 1 or an age below one second (the entry a
  /// write just made must survive the write) or above ``maximumAge``.
  func validate() throws {
    if let keepLast, keepLast < 1 {
      throw SessionStorageError(
        .invalidArgument, "the number of entries to keep must be 1 or more, not \(keepLast)")
    }
    if let maxAge, maxAge < .seconds(1) {
      throw SessionStorageError(
        .invalidArgument, "the maximum age must be at least one second, not \(Retention.format(maxAge))")
    }
    if let maxAge { try SessionStorageError.requireAge(maxAge, "the maximum age") }
  }
}

extension SessionFile {
  /// The retention policy stored in the file.
  public func retention() throws -> Retention {
    try log.reader.withLock { try Retention.stored(on: $0) }
  }

  /// Stores `policy` in the file, for every writer of it, and applies it at once.
  /// - Returns: what applying it deleted.
  /// - Throws: `invalidArgument` for `keepLast` below 1, or `maxAge` below one second or
  ///   above ``Retention/maximumAge``; nothing is stored or deleted.
  @discardableResult
  public func setRetention(_ policy: Retention) throws -> CompactionResult {
    try policy.validate()
    let keep: SQLiteValue = policy.keepLast.map { .integer(Int64($0)) } ?? .null
    let age: SQLiteValue = policy.maxAge.map { .integer($0.milliseconds) } ?? .null
    try backend.requireWritable()
    return try backend.maintain(
      first: ("UPDATE session_retention SET keep_last = ?, max_age_ms = ? WHERE id = 1", [keep, age]),
      deleting: policy.deletes)
  }
}

extension Retention {
  /// The policy stored in the file `connection` reads.
  static func stored(on connection: Connection) throws -> Retention {
    try connection.query(storedSQL) { statement in
      guard try statement.step() else { return .off }
      return Retention(
        keepLast: statement.isNull(at: 0) ? nil : Int(clamping: statement.int64(at: 0)),
        maxAge: statement.isNull(at: 1) ? nil : .milliseconds(statement.int64(at: 1)))
    }
  }

  private static let storedSQL = SQL("SELECT keep_last, max_age_ms FROM session_retention WHERE id = 1")

  /// The DELETEs that apply the policy to the feed, one per limit it sets:
  /// ``SessionFile/setRetention(_:)`` runs them at once, and the store's writer, on which
  /// triggers do not fire, after each write. After a write, whose entry is the newest and a
  /// moment old, they delete what `session_retention_apply` deletes after another client's row.
  var deletes: [(String, [SQLiteValue])] {
    var deletes: [(String, [SQLiteValue])] = []
    if let keepLast {
      deletes.append(
        (
          "DELETE FROM session_changes WHERE seq <= (SELECT max(seq) FROM session_changes) - ?",
          [.integer(Int64(keepLast))]
        ))
    }
    if let maxAge { deletes.append((SQLiteFile.olderThanSQL, [.integer(maxAge.milliseconds)])) }
    return deletes
  }
}

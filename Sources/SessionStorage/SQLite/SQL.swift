import Synchronization

/// SQL text that every connection prepares once and finds again by a number given to the
/// text when it is made, instead of hashing the text on every run (~1k instructions for a
/// query's text): for the statements of every read and write. Make each one once, as a
/// `static let`; SQL built at run time is passed as a `String` and found by its text.
struct SQL: Sendable {
  let text: String
  /// Where connections keep this statement.
  let slot: Int

  private static let slots = Atomic<Int>(0)

  init(_ text: String) {
    self.text = text
    slot = Self.slots.add(1, ordering: .relaxed).oldValue
  }
}

/// What a connection runs: a `String` (prepared statements found by their text) or an
/// ``SQL`` (found by its slot).
protocol SQLSource {
  /// The prepared statement for this SQL on `connection`, prepared on first use.
  func statement(on connection: Connection) throws -> Statement
}

extension String: SQLSource {
  func statement(on connection: Connection) throws -> Statement { try connection.cached(self) }
}

extension SQL: SQLSource {
  func statement(on connection: Connection) throws -> Statement { try connection.prepared(self) }
}

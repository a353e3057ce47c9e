/// A position in a feed: the number of an entry. Cursors only increase, commit order is
/// cursor order, and a number is never used twice.
public struct Cursor: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  /// The number, as stored (`session_changes.seq` for sessions).
  public let rawValue: Int64

  /// Wraps a stored number.
  public init(rawValue: Int64) { self.rawValue = rawValue }

  /// Wraps a stored number.
  public init(_ rawValue: Int64) { self.rawValue = rawValue }

  /// The position before any entry was ever written.
  public static let zero = Cursor(0)

  /// Parses a decimal cursor as a user typed it; nil unless it is a whole number ≥ 0.
  public init?(parsing text: some StringProtocol) {
    guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let value = Int64(text)
    else {
      return nil
    }
    self.rawValue = value
  }

  /// The cursor right after this one, or nil after the largest one (`Int64.max`), which no
  /// entry can follow. Cursors come from storage that other tools can edit, so this never
  /// traps.
  public var next: Cursor? {
    let (sum, overflow) = rawValue.addingReportingOverflow(1)
    return overflow ? nil : Cursor(sum)
  }

  /// The cursor right before this one, or nil before the smallest one (`Int64.min`).
  public var previous: Cursor? {
    let (difference, overflow) = rawValue.subtractingReportingOverflow(1)
    return overflow ? nil : Cursor(difference)
  }

  /// Orders cursors by number.
  public static func < (lhs: Cursor, rhs: Cursor) -> Bool { lhs.rawValue < rhs.rawValue }

  /// The number in decimal.
  public var description: String { String(rawValue) }
}

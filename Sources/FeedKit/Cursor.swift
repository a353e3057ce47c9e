/// A position in a feed: the number of an entry. Cursors only increase, commit order is
/// cursor order, and a number is never used twice.
///
/// A cursor prints as its number and parses from it (`Cursor("42")`), and encodes in JSON
/// as that number.
public struct Cursor: Hashable, Comparable, Sendable, Codable, LosslessStringConvertible {
  /// The number, as the feed's source stores it.
  public let value: Int64

  /// The cursor numbered `value`.
  public init(_ value: Int64) { self.value = value }

  /// Parses a decimal cursor as a person typed it; nil unless it is a whole number from 0
  /// to `Int64.max`, digits only (no sign, no spaces).
  public init?(_ description: String) {
    guard !description.isEmpty, description.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
      let value = Int64(description)
    else { return nil }
    self.value = value
  }

  /// Decodes the number.
  public init(from decoder: any Decoder) throws {
    value = try decoder.singleValueContainer().decode(Int64.self)
  }

  /// Encodes the number.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(value)
  }

  /// The position before any entry was ever written.
  public static let zero = Cursor(0)

  /// The cursor right after this one, or nil after the largest one (`Int64.max`), which no
  /// entry can follow. Cursors come from storage that other tools can edit, so this never
  /// traps.
  public var next: Cursor? {
    let (sum, overflow) = value.addingReportingOverflow(1)
    return overflow ? nil : Cursor(sum)
  }

  /// The cursor right before this one, or nil before the smallest one (`Int64.min`).
  public var previous: Cursor? {
    let (difference, overflow) = value.subtractingReportingOverflow(1)
    return overflow ? nil : Cursor(difference)
  }

  /// Orders cursors by number.
  public static func < (lhs: Cursor, rhs: Cursor) -> Bool { lhs.value < rhs.value }

  /// The number in decimal.
  public var description: String { String(value) }
}

import Foundation

/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case text(String)
}

extension SQLiteValue {
  /// Whether binding `other` gives SQLite the very same value: texts compare by their
  /// bytes, since Swift's `==` takes canonically equivalent texts (`é` and `e\u{301}`) for
  /// equal.
  func isIdentical(to other: SQLiteValue) -> Bool {
    switch (self, other) {
    case (.null, .null): return true
    case (.integer(let first), .integer(let second)): return first == second
    case (.text(let first), .text(let second)):
      return first.utf8.withContiguousStorageIfAvailable { firstBytes in
        second.utf8.withContiguousStorageIfAvailable { sameBytes(firstBytes, $0) }
      } == .some(true)
    default: return false
    }
  }
}

/// Whether two runs of bytes are equal, with `memcmp` (a generic comparison costs ~35
/// instructions a byte).
func sameBytes(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Bool {
  guard first.count == second.count else { return false }
  guard let firstBase = first.baseAddress, let secondBase = second.baseAddress else { return true }
  return memcmp(firstBase, secondBase, first.count) == 0
}

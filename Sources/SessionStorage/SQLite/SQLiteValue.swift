/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case double(Double)
  case text(String)
  case blob([UInt8])
}

/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case text(String)
}

extension Connection {
  /// How a transaction begins.
  enum TransactionKind: String {
    /// Takes the write lock at once (`BEGIN IMMEDIATE`): writers queue on the busy timeout.
    case immediate = "BEGIN IMMEDIATE"
    /// Takes locks when first needed (`BEGIN DEFERRED`): for reads.
    case deferred = "BEGIN DEFERRED"
  }

  /// Runs `body` in a transaction that commits when it returns and rolls back when it throws.
  func transaction<Result>(_ kind: TransactionKind, _ body: () throws -> Result) throws -> Result {
    try run(kind.rawValue)
    let result: Result
    do {
      result = try body()
    } catch {
      // Harmless to swallow: the caller gets the error that made us roll back, and a
      // ROLLBACK that fails leaves SQLite to roll back when the connection next writes or
      // closes; nothing of this transaction was committed either way.
      if isInTransaction { try? run("ROLLBACK") }
      throw error
    }
    do {
      try run("COMMIT")
    } catch {
      if isInTransaction { try? run("ROLLBACK") }  // harmless, as above
      throw error
    }
    return result
  }
}

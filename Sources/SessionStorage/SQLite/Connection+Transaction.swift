extension Connection {
  /// How a transaction begins.
  enum TransactionKind {
    /// Takes the write lock at once (`BEGIN IMMEDIATE`): writers queue on the busy timeout.
    case immediate
    /// Takes locks when first needed (`BEGIN DEFERRED`): for reads.
    case deferred

    /// The statement that begins it.
    var begin: SQL {
      switch self {
      case .immediate: Self.beginImmediate
      case .deferred: Self.beginDeferred
      }
    }

    private static let beginImmediate = SQL("BEGIN IMMEDIATE")
    private static let beginDeferred = SQL("BEGIN DEFERRED")
  }

  private static let commit = SQL("COMMIT")
  private static let rollback = SQL("ROLLBACK")

  /// Runs `body` in a transaction that commits when it returns and rolls back when it throws.
  func transaction<Result>(_ kind: TransactionKind, _ body: () throws -> Result) throws -> Result {
    try run(kind.begin)
    let result: Result
    do {
      result = try body()
    } catch {
      // Harmless to swallow: the caller gets the error that made us roll back, and a
      // ROLLBACK that fails leaves SQLite to roll back when the connection next writes or
      // closes; nothing of this transaction was committed either way.
      if isInTransaction { try? run(Self.rollback) }
      throw error
    }
    do {
      try run(Self.commit)
    } catch {
      if isInTransaction { try? run(Self.rollback) }  // harmless, as above
      throw error
    }
    return result
  }
}

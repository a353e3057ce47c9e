import CSQLite

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
  /// A write transaction whose COMMIT fails throws an error that says what became of it
  /// (``commitFailed(_:)``): never a result for a change that did not commit.
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
      throw kind == .immediate ? Self.commitFailed(error) : error
    }
    return result
  }

  /// The error of a write transaction's COMMIT that failed, saying what became of it.
  ///
  /// SQLite rolls the transaction back, and no other connection sees it. After an I/O
  /// error (a failed `fsync`, a failed write), though, its pages may be whole in the `-wal`
  /// file past the last commit SQLite knows of: the next write here overwrites them, and a
  /// close that checkpoints drops them, but a crash of a process that has the file open
  /// makes the next opener recover the WAL from the file, and the change comes back.
  /// Nobody can promise it is gone, so the message does not.
  static func commitFailed(_ error: any Error) -> any Error {
    guard var failure = error as? SessionStorageError, failure.code == .sqlite else { return error }
    let ioError = failure.resultCode.map { $0 & 0xff == SQLITE_IOERR } ?? false
    failure.message =
      ioError
      ? "the change could not be committed: the disk reported an error while SQLite wrote it "
        + "(\(failure.message)). No other process sees it now, but it may still be in the -wal file, "
        + "and if a process that has the store open crashes before the next write, SQLite's recovery "
        + "can bring it back: check the disk, then read the state again before you rely on either outcome"
      : "the change could not be committed (\(failure.message)); SQLite rolled it back"
    return failure
  }
}

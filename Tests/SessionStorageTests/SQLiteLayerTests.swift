import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The internal SQLite layer: typed values, transactions, errors, handles.
@Suite struct SQLiteLayerTests {
  let dir: TemporaryDirectory
  let connection: Connection

  init() throws {
    dir = try TemporaryDirectory()
    connection = try Connection(path: dir.file("layer.db"), mode: .readWriteCreate)
    try connection.execute("CREATE TABLE t (i INTEGER, s TEXT, n)")
  }

  @Test func everyValueTypeRoundTrips() throws {
    try connection.run("INSERT INTO t VALUES (?, ?, ?)", [.integer(Int64.min), .text("José 🧑‍💻"), .null])
    let row = try connection.query("SELECT i, s, n FROM t") { statement in
      try #require(try statement.step())
      return (statement.int64(at: 0), try statement.text(at: 1), statement.isNull(at: 2))
    }
    #expect(row.0 == Int64.min)
    #expect(row.1 == "José 🧑‍💻")
    #expect(row.2)
  }

  @Test func invalidUTF8TextIsRefusedStrictlyAndRepairedLossily() throws {
    try connection.run("INSERT INTO t (s) VALUES (CAST(X'41FF42' AS TEXT))")
    try connection.query("SELECT s FROM t") { statement in
      try #require(try statement.step())
      #expect(throws: SessionStorageError.self) { try statement.text(at: 0) }
      #expect(statement.lossyText(at: 0) == "A\u{FFFD}B")
    }
  }

  @Test func aTransactionCommitsOnReturnAndRollsBackOnThrow() throws {
    struct Stop: Error {}
    try connection.transaction(.immediate) { try connection.run("INSERT INTO t (i) VALUES (1)") }
    #expect(throws: Stop.self) {
      try connection.transaction(.immediate) {
        try connection.run("INSERT INTO t (i) VALUES (2)")
        throw Stop()
      }
    }
    #expect(!connection.isInTransaction)
    #expect(try connection.scalarInt("SELECT group_concat(i) FROM t") == 1)
  }

  @Test func aTextIsBoundAgainWhenOnlyItsBytesDiffer() throws {
    // The statement keeps its last binding; canonically equivalent texts are equal Strings.
    for name in ["Jos\u{E9}", "Jose\u{301}", "Jose\u{301}", "Jos\u{E9}"] {
      try connection.run("INSERT INTO t (s) VALUES (?)", [.text(name)])
    }
    #expect(
      try connection.scalarText("SELECT group_concat(hex(s), ' ') FROM t")
        == "4A6F73C3A9 4A6F7365CC81 4A6F7365CC81 4A6F73C3A9")
    for value: SQLiteValue in [.integer(1), .null, .integer(1), .text("1")] {
      try connection.run("INSERT INTO t (n) VALUES (?)", [value])
    }
    #expect(
      try connection.scalarText("SELECT group_concat(quote(n), ' ') FROM t WHERE s IS NULL") == "1 NULL 1 '1'"
    )
  }

  @Test func errorsCarryTheExtendedCodeMessageAndSQL() throws {
    try connection.execute("CREATE TABLE u (x UNIQUE)")
    try connection.run("INSERT INTO u VALUES (1)")
    let error = try #require(throws: SessionStorageError.self) {
      try connection.run("INSERT INTO u VALUES (1)")
    }
    #expect(error.resultCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
    #expect(error.message.contains("UNIQUE constraint failed"))
    #expect(error.sql == "INSERT INTO u VALUES (1)")
    let syntax = try #require(throws: SessionStorageError.self) { try connection.run("SELEC 1") }
    #expect(syntax.message.contains("syntax error"))
  }

  @Test func closingReleasesTheFile() throws {
    let path = dir.file("closing.db")
    let other = try Connection(path: path, mode: .readWriteCreate)
    try other.run("CREATE TABLE x (y)")
    _ = try other.scalarInt("SELECT count(*) FROM x")
    #expect(openFileDescriptors(for: dir.path).contains(path))
    other.close()
    other.close()
    #expect(!openFileDescriptors(for: dir.path).contains(path))
  }
}

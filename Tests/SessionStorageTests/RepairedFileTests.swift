import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A refusal belongs to the file as it is, not to the process: once the file is repaired
/// with the SQL the error names, every instance reads it — new ones, the one that was
/// refused, and a writable one that writes.
@Suite(.timeLimit(.minutes(10))) struct RepairedFileTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  @Test func aFileRepairedByHandIsReadByEveryInstance() async throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, "CREATE INDEX session_changes_at ON session_changes (at)")
    let refused = try SessionStore(path: path, options: .init(readOnly: true))
    let error = try #require(throws: SessionStorageError.self) { try refused.state }
    #expect(error.code == .tamperedSchema)
    #expect(error.message.contains("DROP INDEX session_changes_at"), "\(error.message)")

    // The repair the error names; the refused instance stays open meanwhile.
    try await ProcessRunner.sqlite3(path, "DROP INDEX session_changes_at")
    let reader = try SessionStore(path: path, options: .init(readOnly: true))
    #expect(try reader.state.username == "alice")
    #expect(try refused.state.username == "alice")
    #expect(try reader.check().allSatisfy { $0.verdict == .passed })

    let writer = try SessionStore(path: path, options: .init(origin: "test"))
    try writer.blocking.rename(to: "bob")
    #expect(try writer.state.username == "bob")
    #expect(try writer.history().map(\.after.username) == ["alice", "bob"])
    #expect(try reader.snapshotAndChanges().state.username == "bob")
  }

  /// A writable instance on a file a read-only one found tampered with, repaired before the
  /// writable one opens: it writes, and reads what it wrote.
  @Test func aWriterOnARepairedFileReadsWhatItWrote() async throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, "CREATE TABLE notes (x)")
    let refused = try SessionStore(path: path, options: .init(readOnly: true))
    #expect(throws: SessionStorageError.self) { try refused.history() }
    try await ProcessRunner.sqlite3(path, "DROP TABLE notes")
    let writer = try SessionStore(path: path, options: .init(origin: "test"))
    let entry = try #require(try await writer.rename(to: "bob"))
    #expect(try writer.history(from: .after(Cursor(entry.cursor.value - 1))).map(\.cursor) == [entry.cursor])
    #expect(try writer.state.username == "bob")
  }
}

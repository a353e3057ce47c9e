import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Every state of a healthy file that SQLite itself accepts opens and reads: the checks that
/// run on every open are exact, never a guess that a busy store can fail.
@Suite(.timeLimit(.minutes(10))) struct AcceptedFileTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// Builds, from the store at `source`, the file a checkpoint that grows the database leaves
  /// for a moment: another connection commits 400 renames into the WAL (no checkpoint), the
  /// file and its `-wal` are copied while it is open, and page 1 of the copy is overwritten
  /// with the WAL's newest page 1, as a checkpoint writes it first. The copy's header then
  /// counts pages its file does not hold yet; the WAL holds them.
  static let checkpointInProgress = """
    import shutil, sqlite3, struct, sys
    source, copy = sys.argv[1], sys.argv[2]
    db = sqlite3.connect(source, isolation_level=None)
    db.execute("PRAGMA wal_autocheckpoint = 0")
    for step in range(400):
        db.execute("UPDATE session SET username = ?", ("user%d" % step,))
    shutil.copyfile(source, copy)
    shutil.copyfile(source + "-wal", copy + "-wal")
    wal = open(copy + "-wal", "rb").read()
    page_size = struct.unpack(">I", wal[8:12])[0]
    page1, offset = None, 32
    while offset + 24 + page_size <= len(wal):
        if struct.unpack(">I", wal[offset:offset + 4])[0] == 1:
            page1 = wal[offset + 24:offset + 24 + page_size]
        offset += 24 + page_size
    with open(copy, "r+b") as file:
        file.write(page1)
    pages = struct.unpack(">I", page1[28:32])[0]
    size = len(open(copy, "rb").read())
    print("short" if size < pages * page_size else "whole")
    """

  @Test func aCheckpointThatGrowsTheFileIsNotATruncatedFile() async throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
    let copy = dir.file("checkpointing.db")
    let built = try await ProcessRunner.run(
      "/usr/bin/python3", ["-c", Self.checkpointInProgress, path, copy])
    #expect(built.status == 0, "\(built.stderr)")
    // The state this test is about: the header counts more pages than the file has.
    try #require(built.stdout == "short\n")

    // SQLite accepts it (its size comes from the WAL): so does every open, reading or writing.
    let reader = try SessionStore(path: copy, options: .init(readOnly: true))
    #expect(try reader.state.username == "user399")
    let writer = try SessionStore(path: copy, options: .init(origin: "test"))
    try writer.blocking.rename(to: "bob")
    #expect(try reader.state.username == "bob")
    #expect(try writer.check().allSatisfy { $0.verdict == .passed })
  }

  /// A store switched to the rollback journal (`PRAGMA journal_mode = DELETE` in the sqlite3
  /// shell, or rebuilt from `.dump`) has no `-wal`, and none was deleted: a read-only store
  /// reads it and sees shell writes; a writable open switches it back to WAL.
  @Test func aFileInRollbackJournalModeIsReadAndAWriterTurnsItBackToWAL() async throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA journal_mode = DELETE") == "delete\n")
    let reader = try SessionStore(path: path, options: .init(readOnly: true))
    #expect(try reader.state.username == "alice")
    #expect(try reader.history().map(\.cursor.value) == [1])
    #expect(try reader.check().allSatisfy { $0.verdict == .passed })
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'bob'")
    #expect(try reader.state.username == "bob")
    #expect(try reader.snapshotAndChanges().state.username == "bob")
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"))

    let writer = try SessionStore(path: path, options: .init(origin: "test"))
    try writer.blocking.rename(to: "carol")
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA journal_mode") == "wal\n")
    #expect(try reader.state.username == "carol")
    #expect(try reader.history().map(\.after.username) == ["alice", "bob", "carol"])
  }

  /// A `-wal` deleted under a read-only store that reads it is still noticed.
  @Test func aWALDeletedUnderAReaderIsStillNoticed() async throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
    let reader = try SessionStore(path: path, options: .init(readOnly: true))
    #expect(try reader.snapshotAndChanges().state.username == "alice")
    #expect(unlink(path + "-wal") == 0)
    let error = try #require(throws: SessionStorageError.self) { try reader.snapshotAndChanges() }
    #expect(error.code == .fileReplaced)
    #expect(error.message.contains("-wal file beside it was deleted"))
  }
}

import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// `SessionStore.requireFile().backup(to:overwrite:)` and `restore(from:)` in one process: what they
/// return, what they refuse, and what this process's subscribers see.
@Suite(.timeLimit(.minutes(10))) struct BackupTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  @Test func aBackupNamesItsHeadAndEntriesAndOpensAsAStoreOfItsOwn() throws {
    for name in ["a", "b", "c"] { try store.blocking.rename(to: name) }
    try store.compact(keepingLast: 2)
    let target = dir.file("backup.db")
    let result = try store.requireFile().backup(to: target)
    #expect(result.path == target)
    #expect(result.head == Cursor(3))
    #expect(result.entries == 2)
    var info = stat()
    #expect(stat(target, &info) == 0)
    #expect(Int64(info.st_size) == result.bytes)
    #expect(info.st_mode & 0o777 == 0o600)
    let copy = try SessionStore(path: target, options: .init(origin: "test", readOnly: true))
    #expect(try copy.check().allSatisfy { $0.verdict == .passed })
    #expect(try copy.state.username == "c")
    #expect(try copy.bounds() == FeedBounds(oldest: Cursor(2), head: Cursor(3)))

    let exists = #expect(throws: SessionStorageError.self) { try store.requireFile().backup(to: target) }
    #expect(exists?.code == .fileExists)
    try store.blocking.rename(to: "d")
    #expect(try store.requireFile().backup(to: target, overwrite: true).head == Cursor(4))
  }

  @Test func aRestoreEndsThisProcesssSubscribersAndEveryInstanceSeesIt() async throws {
    for name in ["a", "b"] { try await store.rename(to: name) }
    let backup = try store.requireFile().backup(to: dir.file("backup.db"))
    for name in ["c", "d"] { try await store.rename(to: name) }
    let reader = try SessionStore(path: path, options: .init(origin: "test", readOnly: true))
    let changes = try store.changes(from: .beginning)
    // The subscriber has read all four entries before the restore (one that read only two
    // would find the restored log the same as what it saw): a child task, which the suite's
    // time limit ends with the test.
    let consumed = Tally()
    async let ending: String = {
      var iterator = changes.makeAsyncIterator()
      do {
        for _ in 0..<4 {
          guard try await iterator.next() != nil else { return "ended" }
          consumed.advance()
        }
        let extra = try await iterator.next()
        return "delivered \(extra.map { "\($0.cursor)" } ?? "nothing")"
      } catch {
        return "\(error)"
      }
    }()
    #expect(await eventually { consumed.value == 4 }, "the subscriber read the four entries")
    let result = try store.requireFile().restore(from: backup.path)
    #expect(result.previousHead == Cursor(4))
    #expect(result.head == Cursor(2))
    #expect(result.entries == 2)
    #expect(await ending.contains("start again from a snapshot"))
    #expect(try reader.state.username == "b")
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    #expect(try await store.rename(to: "e")?.cursor == Cursor(3))
  }

  @Test func aReadOnlyStoreRestoresNothing() throws {
    try store.blocking.rename(to: "a")
    let backup = try store.requireFile().backup(to: dir.file("backup.db"))
    let reader = try SessionStore(path: path, options: .init(origin: "test", readOnly: true))
    let refused = #expect(throws: SessionStorageError.self) {
      try reader.requireFile().restore(from: backup.path)
    }
    #expect(refused?.code == .readOnly)
  }

  /// The store, each of its companion files, and each through a symbolic link to its
  /// directory, as a backup target (with `overwrite`) and a restore source, while this
  /// instance holds the store open and has written: refused with `storeFile`, and every
  /// write is in the file for a fresh `sqlite3` once the instance is gone.
  @Test func theStoresOwnFilesAreRefusedAndNoWriteIsLost() async throws {
    let held = dir.file("held.db")
    #expect(symlink(dir.path, dir.file("link")) == 0)
    do {
      let holder = try SessionStore(path: held, options: .init(origin: "test"))
      for index in 0..<20 { try await holder.rename(to: "name-\(index)") }
      for suffix in ["", "-wal", "-shm", "-journal"] {
        for name in [held + suffix, dir.file("link/held.db" + suffix)] {
          let backup = #expect(throws: SessionStorageError.self) {
            try holder.requireFile().backup(to: name, overwrite: true)
          }
          #expect(backup?.code == .storeFile, "\(name): \(String(describing: backup))")
          #expect(backup?.path == name)
          let restore = #expect(throws: SessionStorageError.self) {
            try holder.requireFile().restore(from: name)
          }
          #expect(restore?.code == .storeFile, "\(name): \(String(describing: restore))")
        }
      }
      #expect(try await holder.rename(to: "after")?.cursor == Cursor(21))
    }
    var read: [String] = []
    for sql in [
      "PRAGMA integrity_check", "SELECT count(*), max(seq) FROM session_changes",
      "SELECT username FROM session",
    ] {
      read.append(try await ProcessRunner.sqlite3(held, sql))
    }
    #expect(read == ["ok\n", "21|21\n", "after\n"])
  }

  /// A target that is not a regular file (a FIFO) is refused with `notARegularFile`, also
  /// with `overwrite`, and stays a FIFO.
  @Test func aTargetThatIsNotARegularFileIsRefused() throws {
    let fifo = dir.file("fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    for overwrite in [false, true] {
      let refused = #expect(throws: SessionStorageError.self) {
        try store.requireFile().backup(to: fifo, overwrite: overwrite)
      }
      #expect(refused?.code == .notARegularFile)
      var info = stat()
      #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
    }
  }
}

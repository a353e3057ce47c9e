import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// `SessionStore.backup(to:overwrite:)` and `restore(from:)` in one process: what they
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
    for name in ["a", "b", "c"] { try store.rename(to: name) }
    try store.compact(keepingLast: 2)
    let target = dir.file("backup.db")
    let result = try store.backup(to: target)
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

    let exists = #expect(throws: SessionStorageError.self) { try store.backup(to: target) }
    #expect(exists?.code == .fileExists)
    try store.rename(to: "d")
    #expect(try store.backup(to: target, overwrite: true).head == Cursor(4))
  }

  @Test func aRestoreEndsThisProcesssSubscribersAndEveryInstanceSeesIt() async throws {
    for name in ["a", "b"] { try await store.rename(to: name) }
    let backup = try store.backup(to: dir.file("backup.db"))
    for name in ["c", "d"] { try await store.rename(to: name) }
    let reader = try SessionStore(path: path, options: .init(origin: "test", readOnly: true))
    let changes = try store.changes(from: .beginning)
    let ending = Task {
      var iterator = changes.makeAsyncIterator()
      do {
        for _ in 0..<4 { _ = try await iterator.next() }
        let extra = try await iterator.next()
        return "delivered \(extra.map { "\($0.cursor)" } ?? "nothing")"
      } catch {
        return "\(error)"
      }
    }
    try await Task.sleep(for: .milliseconds(200))
    let result = try store.restore(from: backup.path)
    #expect(result.previousHead == Cursor(4))
    #expect(result.head == Cursor(2))
    #expect(result.entries == 2)
    #expect(await ending.value.contains("start again from a snapshot"))
    #expect(try reader.state.username == "b")
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    #expect(try await store.rename(to: "e")?.cursor == Cursor(3))
  }

  @Test func aReadOnlyStoreRestoresNothing() throws {
    try store.rename(to: "a")
    let backup = try store.backup(to: dir.file("backup.db"))
    let reader = try SessionStore(path: path, options: .init(origin: "test", readOnly: true))
    let refused = #expect(throws: SessionStorageError.self) { try reader.restore(from: backup.path) }
    #expect(refused?.code == .readOnly)
  }
}

import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Files that are damaged, misplaced or unwritable give a clear error and stay untouched.
@Suite(.timeLimit(.minutes(10))) struct HostileFileTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  @Test func aTruncatedDatabaseIsRefusedUntouched() throws {
    do {
      let store = try SessionStore(path: path, options: .init(durability: .normal))
      for step in 0..<2000 { try store.blocking.rename(to: "user\(step)") }
    }
    let whole = try #require(fileBytes(path))
    #expect(whole.count > 16 * 4096)
    try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
    let cut = try #require(fileBytes(path))
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: path) }
    #expect(error.code == .corrupt)
    #expect(error.message.contains("truncated"))
    #expect(fileBytes(path) == cut)
  }

  @Test func aWALLeftBehindByACrashIsRecovered() throws {
    let crashed = dir.file("crashed.db")
    let store = try SessionStore(path: path, options: .init(durability: .normal))
    for step in 0..<50 { try store.blocking.rename(to: "user\(step)") }
    // Copy the files while the store is open: the commits are in the WAL, not yet in the file.
    #expect(
      (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        > 0)
    try FileManager.default.copyItem(atPath: path, toPath: crashed)
    try FileManager.default.copyItem(atPath: path + "-wal", toPath: crashed + "-wal")
    let recovered = try SessionStore(path: crashed)
    #expect(try recovered.state.username == "user49")
    #expect(try recovered.history(from: .beginning, limit: 100).count == 50)
    #expect(try recovered.check().allSatisfy { $0.verdict == .passed })
  }

  /// How a crashed copy is spoiled so that opening it must be refused.
  struct CrashedRefusal: Sendable, CustomTestStringConvertible {
    let name: String
    let sql: String
    let code: SessionStorageError.Code
    var testDescription: String { name }
  }

  static let crashedRefusals: [CrashedRefusal] = [
    CrashedRefusal(name: "newer schema", sql: "PRAGMA user_version = 99", code: .newerSchema),
    CrashedRefusal(
      name: "newer migration record",
      sql: "INSERT INTO schema_migrations VALUES (5, '0005_future', 'abc', '2030-01-01T00:00:00.000Z')",
      code: .newerSchema),
    CrashedRefusal(
      name: "checksum mismatch", sql: "UPDATE schema_migrations SET checksum = 'deadbeef'",
      code: .checksumMismatch),
    CrashedRefusal(
      name: "foreign table", sql: "CREATE TABLE invoices (id INTEGER PRIMARY KEY)", code: .tamperedSchema),
    CrashedRefusal(
      name: "trigger dropped", sql: "DROP TRIGGER accounts_external_update", code: .tamperedSchema),
  ]

  /// A crash leaves commits in the `-wal`; a refused open must not checkpoint them into the
  /// file (or delete the WAL) when its connection closes: both stay byte-identical.
  @Test(arguments: crashedRefusals)
  func aRefusedFileAndTheWALACrashLeftStayByteIdentical(_ refusal: CrashedRefusal) async throws {
    let store = try SessionStore(path: path, options: .init(durability: .normal))
    for step in 0..<50 { try await store.rename(to: "user\(step)") }
    // A read-only open of a tampered schema succeeds (for check()) and is covered elsewhere.
    for readOnly in refusal.code == .tamperedSchema ? [false] : [false, true] {
      let crashed = dir.file("crashed-\(readOnly).db")
      try FileManager.default.copyItem(atPath: path, toPath: crashed)
      try FileManager.default.copyItem(atPath: path + "-wal", toPath: crashed + "-wal")
      // Spoil the copy through its WAL too: the shell must not checkpoint when it closes.
      let spoiled = try await ProcessRunner.run(
        "/usr/bin/sqlite3", ["-cmd", ".dbconfig no_ckpt_on_close on", crashed, refusal.sql])
      #expect(spoiled.status == 0, "\(spoiled.stderr)")
      let database = try #require(fileBytes(crashed))
      let wal = try #require(fileBytes(crashed + "-wal"))
      #expect(wal.count > 0)
      let error = try #require(throws: SessionStorageError.self) {
        try SessionStore(path: crashed, options: .init(readOnly: readOnly))
      }
      #expect(error.code == refusal.code)
      #expect(fileBytes(crashed) == database, "readOnly: \(readOnly)")
      #expect(fileBytes(crashed + "-wal") == wal, "readOnly: \(readOnly)")
    }
  }

  @Test func aPathThatIsADirectoryIsRefused() throws {
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: dir.path) }
    #expect(error.code == .notADatabase)
    #expect(error.message.contains("directory"))
  }

  @Test func aSymbolicLinkIsFollowedToItsTarget() async throws {
    let targetDir = try TemporaryDirectory()
    let target = targetDir.file("real.db")
    try await SessionStore(path: target).logIn(as: "alice")
    let link = dir.file("link.db")
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
    let store = try SessionStore(path: link)
    #expect(try store.requireFile().path == target)
    #expect(try store.state.username == "alice")
    let changes = try store.changes(from: .now)
    try await ProcessRunner.sqlite3(target, "UPDATE session SET username = 'bob'")
    #expect(try await first(1, of: changes).map(\.after.username) == ["bob"])
    #expect(!FileManager.default.fileExists(atPath: link + "-wal"))
  }

  @Test func aDanglingSymbolicLinkIsRefusedAndCreatesNothing() throws {
    let link = dir.file("dangling.db")
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.file("nowhere/real.db"))
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: link) }
    #expect(error.code == .notFound)
    #expect(error.message.contains("symbolic link"))
    #expect(!FileManager.default.fileExists(atPath: dir.file("nowhere")))
  }

  @Test func aReadOnlyLocationRefusesWritesButServesReads() async throws {
    guard
      let place = try await ReadOnlyPlace(
        in: dir.path, prepare: { try SessionStore(path: $0 + "/session.db").blocking.logIn(as: "alice") })
    else {
      Issue.record("could not make a read-only directory here")
      return
    }
    let existing = place.file("session.db")
    let before = try #require(fileBytes(existing))
    let write = try #require(throws: SessionStorageError.self) { try SessionStore(path: existing) }
    #expect(write.code == .readOnly)
    let reader = try SessionStore(path: existing, options: .init(readOnly: true))
    #expect(try reader.state.username == "alice")
    #expect(fileBytes(existing) == before)
    let create = try #require(throws: SessionStorageError.self) {
      try SessionStore(path: place.file("new.db"))
    }
    #expect(create.code == .readOnly)
    #expect(create.description.contains(place.file("new.db")))
  }
}

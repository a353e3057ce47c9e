import Foundation
import SystemKit
import TestSupport
import Testing

/// `backup` of a corrupt store: the copy holds the store's pages as they are, so what fails
/// in it is the store's failure. The message names the store, never the private file the
/// copy was checked under (gone by the time anyone reads the message), and nothing is left.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CorruptStoreBackupTests {
  /// Where the store is damaged (a byte offset in its file), and what the message says.
  struct Damage: CustomTestStringConvertible, Sendable {
    var name: String
    var offset: Int
    var bytes: [UInt8]
    var says: String
    var testDescription: String { name }
  }

  static let damages = [
    // The header of session_changes' page (its type byte is no page type): every read of the
    // feed fails. (Garbled cell pointers would not do: SQLite follows them without a bounds
    // check outside the integrity check, so what a read finds there varies from run to run.)
    Damage(
      name: "a page that cannot be read", offset: 4096 * 3, bytes: Array(repeating: 0xff, count: 8),
      says: "the store cannot be read, so nothing was written: the database file is corrupt"),
    // The end of a table's page: the integrity check fails, reads still work.
    Damage(
      name: "a page that fails the integrity check", offset: 4096 * 6 + 4090,
      bytes: Array(repeating: 7, count: 6),
      says: "the store is corrupt, so its copy is too (integrity: PRAGMA integrity_check:"),
  ]

  @Test(arguments: damages)
  func theMessageNamesTheStore(_ damage: Damage) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    for index in 1...30 { #expect(try await sandbox.run(db: db, ["rename", "user\(index)"]).status == 0) }
    #expect(try await sandbox.sqlite(db, "PRAGMA page_size; PRAGMA page_count") == "4096\n12")
    // Written with the sqlite3 shell closed: no process has the store open.
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: db))
    try handle.seek(toOffset: UInt64(damage.offset))
    try handle.write(contentsOf: damage.bytes)
    try handle.close()

    let target = sandbox.path("b.db")
    let outcome = try await sandbox.run(db: db, ["backup", target])
    #expect(outcome.status == 1, "\(outcome)")
    #expect(outcome.stdout == "")
    #expect(outcome.stderr.hasPrefix("sessionctl: error: \(db): \(damage.says)"), "\(outcome.stderr)")
    #expect(outcome.stderr.contains("nothing was written"), "\(outcome.stderr)")
    #expect(!outcome.stderr.contains(".b.db.backup-"), "the private file is not named: \(outcome.stderr)")
    #expect(!sandbox.exists(target))
    let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter {
      $0.hasPrefix(".b.db.")
    }
    #expect(left == [])
  }
}

import Foundation
import SystemKit
import TestSupport
import Testing

/// A `-wal`, `-shm` or `-journal` left beside a path by another database is never paired
/// with a new file there: neither a backup nor a new store takes another database's
/// commits or rolls back its transaction. Each is refused, naming the leftovers, and
/// nothing is written.
@Suite(.serialized, .timeLimit(.minutes(10))) struct LeftoverCompanionTests {
  /// Python's sqlite3 module: 5 commits kept in the `-wal` (no checkpoint), then killed,
  /// as a crash would end it: the `-wal` and `-shm` stay beside the file.
  static let crashedWriter = """
    import sqlite3, os, signal, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("PRAGMA wal_autocheckpoint = 0")
    for i in range(5):
        c.execute("UPDATE session SET username = ? WHERE id = 1", ("mallory-%d" % i,))
    os.kill(os.getpid(), signal.SIGKILL)
    """

  /// Python's sqlite3 module in rollback-journal mode, killed in the middle of a transaction
  /// that spilled to the file: a hot `-journal` stays beside it.
  static let crashedTransaction = """
    import sqlite3, os, signal, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("PRAGMA journal_mode = DELETE")
    c.execute("PRAGMA cache_size = 1")
    c.execute("BEGIN IMMEDIATE")
    for i in range(200):
        c.execute("UPDATE session SET username = ? WHERE id = 1", ("mallory-%d" % i,))
    os.kill(os.getpid(), signal.SIGKILL)
    """

  /// Makes `path` a store of mallory's whose last commits are only in a leftover `-wal`,
  /// then deletes the file itself: the `-wal` and `-shm` of a deleted database.
  func leaveAStaleWAL(at path: String, in sandbox: Sandbox) async throws -> (wal: Data?, shm: Data?) {
    #expect(try await sandbox.run(db: path, ["login", "mallory"]).status == 0)
    let crash = try await sandbox.runProgram(
      "/usr/bin/python3", ["-c", Self.crashedWriter, path], environment: sandbox.environment)
    #expect(crash.status == 128 + SIGKILL, "\(crash)")
    #expect((sandbox.contents(path + "-wal")?.count ?? 0) > 0, "the commits are in the -wal")
    #expect(unlink(path) == 0)
    return (sandbox.contents(path + "-wal"), sandbox.contents(path + "-shm"))
  }

  /// The files in the sandbox's root whose names begin with `prefix` (staged copies).
  func files(_ sandbox: Sandbox, beginningWith prefix: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.hasPrefix(prefix) }
  }

  @Test func aBackupIsNeverPairedWithTheWALOfADeletedDatabase() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let target = sandbox.path("t.db")
    let leftovers = try await leaveAStaleWAL(at: target, in: sandbox)

    let refused = try await sandbox.run(db: db, ["backup", target])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stdout == "")
    #expect(
      refused.stderr.hasPrefix(
        "sessionctl: error: \(target): no file is there, but its -wal and -shm files are left from another "
          + "database"), "\(refused.stderr)")
    #expect(refused.stderr.contains("nothing was written"), "\(refused.stderr)")
    #expect(refused.stderr.contains("remove \(target)-wal and \(target)-shm, or choose another name"))
    #expect(!sandbox.exists(target), "no backup was placed beside another database's -wal")
    #expect(sandbox.contents(target + "-wal") == leftovers.wal, "the leftovers are not touched")
    #expect(sandbox.contents(target + "-shm") == leftovers.shm)
    #expect(try files(sandbox, beginningWith: ".t.db.").isEmpty)

    // Once they are removed, as the message says, the backup holds alice's session only.
    unlink(target + "-wal")
    unlink(target + "-shm")
    let backup = try await sandbox.run(db: db, ["backup", target])
    #expect(backup.status == 0, "\(backup)")
    let status = try await sandbox.run(db: target, ["status", "--json"])
    #expect(status.stdout.contains(#""username":"alice""#), "\(status)")
  }

  @Test func aNewStoreNeverTakesTheHistoryOfADeletedOne() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("t.db")
    let leftovers = try await leaveAStaleWAL(at: db, in: sandbox)

    let refused = try await sandbox.run(db: db, ["login", "bob"])
    #expect(refused.status == 1, "\(refused)")
    #expect(
      refused.stderr.hasPrefix(
        "sessionctl: error: \(db): no file is there, but its -wal and -shm files are left from another database"
      ),
      "\(refused.stderr)")
    #expect(refused.stderr.contains("nothing was created"), "\(refused.stderr)")
    #expect(!sandbox.exists(db), "no store was created")
    #expect(sandbox.contents(db + "-wal") == leftovers.wal, "the leftovers are not touched")
    #expect(sandbox.contents(db + "-shm") == leftovers.shm)
    #expect(try files(sandbox, beginningWith: ".t.db.").isEmpty)

    // A -shm alone, or a -journal alone, is no less another database's.
    unlink(db + "-wal")
    for name in ["-shm", "-journal"] {
      if name == "-journal" {
        unlink(db + "-shm")
        try Data(repeating: 0xd9, count: 512).write(to: URL(fileURLWithPath: db + name))
      }
      let alone = try await sandbox.run(db: db, ["login", "bob"])
      #expect(alone.status == 1, "\(name): \(alone)")
      #expect(alone.stderr.contains("its \(name) file is left from another database"), "\(alone.stderr)")
      #expect(!sandbox.exists(db))
    }

    // Once they are removed, the new store's history is its own.
    unlink(db + "-journal")
    #expect(try await sandbox.run(db: db, ["login", "bob"]).status == 0)
    let history = try await sandbox.run(db: db, ["history", "--json"])
    #expect(history.lines.count == 1, "\(history)")
    #expect(!history.stdout.contains("mallory"), "\(history)")
  }

  /// `backup --force` over a file with a transaction in its `-journal` (a writer killed in
  /// the middle of it): SQLite would roll that journal back into the backup. Refused, and
  /// the file and its journal are left as they were.
  @Test func aBackupNeverReplacesAFileWhoseJournalHoldsATransaction() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let target = sandbox.path("t.db")
    #expect(try await sandbox.run(db: target, ["login", "mallory"]).status == 0)
    let crash = try await sandbox.runProgram(
      "/usr/bin/python3", ["-c", Self.crashedTransaction, target], environment: sandbox.environment)
    #expect(crash.status == 128 + SIGKILL, "\(crash)")
    let journal = sandbox.contents(target + "-journal")
    #expect((journal?.count ?? 0) > 0, "a hot journal is left")
    let file = sandbox.contents(target)

    let refused = try await sandbox.run(db: db, ["backup", target, "--force"])
    #expect(refused.status == 1, "\(refused)")
    #expect(
      refused.stderr
        == "sessionctl: error: \(target): its -journal file holds a transaction, so something is writing it or "
        + "crashed: stop it (or open the file once, to roll the transaction back), then try again; nothing was "
        + "written\n")
    #expect(sandbox.contents(target) == file)
    #expect(sandbox.contents(target + "-journal") == journal)
    #expect(try files(sandbox, beginningWith: ".t.db.").isEmpty)
  }
}

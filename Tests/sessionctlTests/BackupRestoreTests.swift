import Foundation
import SystemKit
import TestSupport
import Testing

/// `backup` and `restore`: online copies during a write storm, verified before anything is
/// put in place, refusals that leave everything untouched, and what a running `watch` sees.
@Suite(.serialized, .timeLimit(.minutes(10))) struct BackupRestoreTests {
  func json(_ line: String?) throws -> [String: Any] {
    let text = try #require(line)
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  /// Everything the store holds, as the sqlite3 shell dumps it.
  func dump(_ sandbox: Sandbox, _ db: String) async throws -> String { try await sandbox.sqlite(db, ".dump") }

  /// Another process (Python's sqlite3 module) writing as fast as it can, one transaction
  /// per change; it prints "started" after its first commit.
  static let storm = """
    import sqlite3, sys
    c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    i = 0
    while True:
        c.execute("UPDATE session SET username = ?, is_logged_in = ? WHERE id = 1", ("user-%d" % i, i % 2))
        if i == 0:
            print("started", flush=True)
        i += 1
    """

  @Test func aBackupTakenDuringAWriteStormPassesCheckAndRestoresToItsNewestChange() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let (writer, _) = try await sandbox.start(["-c", Self.storm, db], executable: "/usr/bin/python3")
    defer { writer.kill(SIGKILL) }
    #expect(try await writer.readLine() == "started")

    var backups: [(path: String, head: Int, entries: Int)] = []
    for index in 1...3 {
      try await Task.sleep(for: .milliseconds(300))
      let path = sandbox.path("backup-\(index).db")
      let outcome = try await sandbox.run(db: db, ["backup", path, "--json"])
      #expect(outcome.status == 0, "\(outcome)")
      let line = try json(outcome.lines.first)
      #expect(line["type"] as? String == "backup")
      #expect(line["path"] as? String == path)
      let head = try #require(line["head"] as? Int)
      let entries = try #require(line["entries"] as? Int)
      #expect(sandbox.mode(path) == 0o600)
      backups.append((path, head, entries))
    }
    #expect(backups[2].head > backups[0].head, "the storm went on between the backups")
    for backup in backups {
      // Each opens as a store of its own, passes every check, and holds what was reported.
      let check = try await sandbox.run(db: backup.path, ["check"])
      #expect(check.status == 0, "\(check)")
      let history = try await sandbox.run(db: backup.path, ["history", "--json", "--limit", "1000000"])
      #expect(history.lines.count == backup.entries)
      #expect(try json(history.lines.last)["cursor"] as? Int == backup.head)
    }

    // A restore while the storm goes on: the writer waits for it, then writes on top.
    let underStorm = try await sandbox.run(db: db, ["restore", backups[0].path])
    #expect(underStorm.status == 0, "\(underStorm)")
    try await Task.sleep(for: .milliseconds(300))
    writer.kill(SIGKILL)
    _ = try await writer.wait(timeout: .seconds(20))
    let afterStorm = try await sandbox.run(db: db, ["check"])
    #expect(afterStorm.status == 0, "\(afterStorm)")

    // A restore on a quiet store: the state is the backup's newest change.
    let newest = backups[2]
    let restore = try await sandbox.run(db: db, ["restore", newest.path, "--json"])
    #expect(restore.status == 0, "\(restore)")
    let result = try json(restore.lines.first)
    #expect(result["type"] as? String == "restore")
    #expect(result["head"] as? Int == newest.head)
    #expect(result["entries"] as? Int == newest.entries)
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
    let status = try await sandbox.run(db: db, ["status", "--json"])
    #expect(status.stdout == (try await sandbox.run(db: newest.path, ["status", "--json"])).stdout)
    let last = try json(
      try await sandbox.run(db: db, ["history", "--json", "--since", "\(newest.head - 1)"]).lines.last)
    #expect(last["cursor"] as? Int == newest.head)
    let after = try #require(last["after"] as? [String: Any])
    let state = try json(status.lines.first)
    #expect(after["username"] as? String == state["username"] as? String)
    #expect(after["isLoggedIn"] as? Bool == state["isLoggedIn"] as? Bool)
    #expect(after["updatedAt"] as? String == state["updatedAt"] as? String)
    #expect(try await sandbox.run(db: db, ["history", "--limit", "1000000"]).lines.count == newest.entries)
  }

  /// A running `watch` across `sessionctl restore` of an older backup ends with 67: no
  /// cursor of the restored history is printed as if it were new.
  @Test func aWatchAcrossARestoreOfAnOlderBackupExits67() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    #expect(try await sandbox.run(db: db, ["backup", sandbox.path("b.db")]).status == 0)
    _ = try await sandbox.run(db: db, ["rename", "bob"])
    _ = try await sandbox.run(db: db, ["rename", "carol"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--since", "1"])
    #expect(try await watch.readLine()?.hasSuffix("rename alice → bob") == true)
    #expect(try await watch.readLine()?.hasSuffix("rename bob → carol") == true)
    let restore = try await sandbox.run(db: db, ["restore", sandbox.path("b.db")])
    #expect(restore.status == 0, "\(restore)")
    #expect(restore.stdout == "restored \(db) from \(sandbox.path("b.db")): head 1 (was 3), 1 change\n")
    #expect(try await watch.readLine() == nil, "no cursor of the restored history is printed")
    #expect(try await watch.wait(timeout: .seconds(20)) == 67)
    let message = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(message.contains("sessionctl: error: the history changed under cursor 3"), "\(message)")
    #expect(try await sandbox.run(db: db, ["status", "--json"]).stdout.contains(#""username":"alice""#))
  }

  @Test func backupNeverOverwritesWithoutForceAndCreatesPrivateFiles() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let target = sandbox.path("b.db")
    try Data("keep me".utf8).write(to: URL(fileURLWithPath: target))
    chmod(target, 0o644)

    let refused = try await sandbox.run(db: db, ["backup", target])
    #expect(refused.status == 1)
    #expect(
      refused.stderr
        == "sessionctl: error: \(target): the file exists; nothing was written (overwrite it with --force)\n")
    #expect(sandbox.contents(target) == Data("keep me".utf8))
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter {
      $0.contains("backup-")
    }
    #expect(leftovers.isEmpty)

    let forced = try await sandbox.run(db: db, ["backup", target, "--force"])
    #expect(forced.status == 0, "\(forced)")
    #expect(forced.stdout.hasPrefix("backed up to \(target): head 1, 1 change, "))
    #expect(forced.stdout.hasSuffix(" bytes, check passed\n"))
    #expect(sandbox.mode(target) == 0o600, "a replaced file gets the backup's mode too")
    #expect(try await sandbox.run(db: target, ["check"]).status == 0)

    let fresh = sandbox.path("fresh.db")
    #expect(try await sandbox.run(db: db, ["backup", fresh]).status == 0)
    #expect(sandbox.mode(fresh) == 0o600)
    #expect(!sandbox.exists(fresh + "-wal") && !sandbox.exists(fresh + "-journal"))

    let itself = try await sandbox.run(db: db, ["backup", db, "--force"])
    #expect(itself.status == 65)
    #expect(itself.stderr.contains("it is the store itself"))
    let nowhere = try await sandbox.run(db: db, ["backup", sandbox.path("missing/b.db")])
    #expect(nowhere.status == 1)
    #expect(
      nowhere.stderr.contains("cannot create the backup file in \(sandbox.path("missing"))"), "\(nowhere)")
    let noStore = try await sandbox.run(db: sandbox.path("none.db"), ["backup", sandbox.path("c.db")])
    #expect(noStore.status == 1)
    #expect(noStore.stderr.contains("no database here (nothing to back up)"))
    #expect(!sandbox.exists(sandbox.path("none.db")) && !sandbox.exists(sandbox.path("c.db")))
  }

  /// A file `restore` must refuse, and the reason it gives.
  struct Refusal: CustomTestStringConvertible, Sendable {
    var name: String
    var reason: String
    /// Makes the file at the path from a good backup of the sandbox's store.
    var prepare: @Sendable (Sandbox, String) async throws -> Void
    var testDescription: String { name }
  }

  static let refusals: [Refusal] = [
    Refusal(name: "not a database", reason: "not a SQLite database (the header is wrong)") { _, file in
      try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: file))
    },
    Refusal(name: "missing", reason: "no such file") { _, file in unlink(file) },
    Refusal(name: "a directory", reason: "the store was not changed") { _, file in
      unlink(file)
      try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
    },
    Refusal(name: "newer schema", reason: "newer than this build knows") { sandbox, file in
      try await sandbox.sqlite(file, "PRAGMA user_version = 99")
    },
    Refusal(name: "failed check", reason: "failed its check: continuity") { sandbox, file in
      try await sandbox.sqlite(file, "DELETE FROM session_changes WHERE seq = 2")
    },
  ]

  @Test(arguments: refusals)
  func restoreRefusesAndLeavesTheStoreUntouched(_ refusal: Refusal) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let file = sandbox.path("b.db")
    for command in [["login", "alice"], ["rename", "bob"], ["logout"]] {
      _ = try await sandbox.run(db: db, command)
    }
    #expect(try await sandbox.run(db: db, ["backup", file]).status == 0)
    try await refusal.prepare(sandbox, file)
    _ = try await sandbox.run(db: db, ["login", "carol"])
    let before = try await dump(sandbox, db)
    let outcome = try await sandbox.run(db: db, ["restore", file])
    #expect(outcome.status == 1, "\(outcome)")
    #expect(outcome.stdout == "")
    #expect(outcome.stderr.hasPrefix("sessionctl: error: \(file): "), "\(outcome.stderr)")
    #expect(outcome.stderr.contains(refusal.reason), "\(outcome.stderr)")
    #expect(outcome.stderr.contains("the store was not changed"), "\(outcome.stderr)")
    #expect(try await dump(sandbox, db) == before)
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
  }

  @Test func restoreRefusesTheStoreItself() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let outcome = try await sandbox.run(db: db, ["restore", db])
    #expect(outcome.status == 65)
    #expect(outcome.stderr == "sessionctl: error: \(db): it is the store itself; the store was not changed\n")
  }

  /// A backup the user may not read (as `nobody` when the suite runs as root): refused,
  /// the store untouched.
  @Test func restoreRefusesAnUnreadableBackup() async throws {
    let dir = try TemporaryDirectory()
    let place = dir.file("place")
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
    let db = place + "/session.db"
    let file = place + "/backup.db"
    let sessionctl = ProcessRunner.product("sessionctl")
    #expect(try await ProcessRunner.run(sessionctl, ["--db", db, "login", "alice"]).status == 0)
    #expect(try await ProcessRunner.run(sessionctl, ["--db", db, "backup", file]).status == 0)
    #expect(try await ProcessRunner.run(sessionctl, ["--db", db, "rename", "bob"]).status == 0)
    try Unprivileged.give(place)
    chmod(file, 0o000)
    if getuid() == 0 { lchown(file, 0, 0) }
    let outcome = try await Unprivileged.run(
      try Unprivileged.product("sessionctl"), ["--db", db, "restore", file], home: place)
    #expect(outcome.status == 1, "\(outcome.stderr)")
    #expect(outcome.stderr.contains("the store was not changed"), "\(outcome.stderr)")
    let status = try await ProcessRunner.run(sessionctl, ["--db", db, "status", "--json"])
    #expect(status.stdout.contains(#""username":"bob""#))
  }

  /// Another process (Python's sqlite3 module) that holds the store open with automatic
  /// checkpoints off, so that its 20 commits live only in the `-wal`; it prints "written",
  /// then makes one more commit per line it reads ("ok" or the error).
  static let holder = """
    import sqlite3, sys
    c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    c.execute("PRAGMA wal_autocheckpoint = 0")
    for i in range(20):
        c.execute("UPDATE session SET username = ?, is_logged_in = ? WHERE id = 1", ("held-%d" % i, i % 2))
    print("written", flush=True)
    for line in sys.stdin:
        try:
            c.execute("UPDATE session SET username = ? WHERE id = 1", (line.strip(),))
            print("ok", flush=True)
        except Exception as error:
            print("failed: %s" % error, flush=True)
    """

  /// The store's own file and its companions: the `-wal` (commits not yet in the file),
  /// the `-shm` (the lock index every process shares) and the `-journal` (a name SQLite
  /// would roll back into the store).
  static let storeFiles = ["", "-wal", "-shm", "-journal"]

  /// `backup --force` and `restore` given the store, one of its companion files, a path to
  /// it through a symbolic link to its directory, or a (symbolic or hard) link to it,
  /// while another process holds the store open with commits only in the `-wal`: every
  /// one is refused with exit 65 naming the file, and the holder's commits are all there
  /// for a fresh `sqlite3` after it is killed (with `backup STORE-wal --force` accepted,
  /// 21 of its 22 acknowledged commits were gone).
  @Test(arguments: storeFiles)
  func theStoresOwnFilesAreNeverABackupTargetOrSource(_ suffix: String) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let holder = try await ChildProcess(
      "/usr/bin/python3", ["-c", Self.holder, db], environment: sandbox.environment, stdin: .pipe,
      stdout: .pipe, stderr: .file(sandbox.path("io/holder")))
    defer { holder.kill(SIGKILL) }
    #expect(try await holder.readLine() == "written")

    // Names of the file: as it is, through a link to its directory, and links to it (a
    // hard link only to a file that exists). Links are made with symlink(2) and link(2),
    // which open nothing.
    let file = db + suffix
    #expect(symlink(sandbox.root, sandbox.path("dir")) == 0)
    #expect(symlink(file, sandbox.path("symlink")) == 0)
    var names = [file, sandbox.path("dir/s.db" + suffix), sandbox.path("symlink")]
    if sandbox.exists(file) {
      #expect(link(file, sandbox.path("hardlink")) == 0)
      names.append(sandbox.path("hardlink"))
    }
    for name in names {
      let backup = try await sandbox.run(db: db, ["backup", name, "--force"])
      #expect(backup.status == 65, "\(name): \(backup)")
      #expect(backup.stderr.hasPrefix("sessionctl: error: \(name): "), "\(backup.stderr)")
      #expect(backup.stderr.contains(suffix.isEmpty ? "the store itself" : "the store's \(suffix) file"))
      #expect(backup.stderr.contains("nothing was written"), "\(backup.stderr)")
      let restore = try await sandbox.run(db: db, ["restore", name])
      #expect(restore.status == 65, "\(name): \(restore)")
      #expect(restore.stderr.hasPrefix("sessionctl: error: \(name): "), "\(restore.stderr)")
      #expect(restore.stderr.contains("the store was not changed"), "\(restore.stderr)")
    }
    #expect(!sandbox.exists(db + "-journal"), "no journal was planted")
    #expect(try await sandbox.run(db: db, ["status"]).status == 0, "the store still reads")

    // The holder writes once more, then ends as a crash would: its commits are then only
    // in the -wal, where a fresh process must find them.
    try holder.writeLine("after")
    #expect(try await holder.readLine() == "ok", "the holder still writes")
    holder.kill(SIGKILL)
    #expect(try await holder.wait(timeout: .seconds(30)) == 128 + SIGKILL)
    let read = try await sandbox.sqlite(
      db, "PRAGMA integrity_check; SELECT count(*) FROM session_changes; SELECT username FROM session")
    #expect(read == "ok\n22\nafter")
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
  }

  /// A target that exists and is not a regular file — a FIFO, a directory, a symbolic link
  /// to a FIFO and, as root, a character device made in the sandbox (`mknod`, the same
  /// device as `/dev/full`) — is refused with exit 65 also with `--force`, and stays what it
  /// was. `/dev/full` itself is tried last, and only once every stand-in was refused: a
  /// regression must not replace the machine's device.
  @Test func aTargetThatIsNotARegularFileIsNeverReplaced() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let fifo = sandbox.path("fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    let directory = sandbox.path("directory")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    #expect(symlink(fifo, sandbox.path("link")) == 0)
    var targets = [
      (fifo, S_IFIFO, "a FIFO"), (directory, S_IFDIR, "a directory"),
      (sandbox.path("link"), S_IFIFO, "a FIFO"),
    ]
    let device = sandbox.path("full")
    // Device 1,7 (Linux encodes a small major and minor as major << 8 | minor).
    if getuid() == 0, mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 7)) == 0 {
      targets.append((device, S_IFCHR, "a character device"))
    }
    /// Whether `backup TARGET` and `backup TARGET --force` were refused and left it as it was.
    func refused(_ target: String, _ type: mode_t, _ what: String) async throws -> Bool {
      var kept = true
      for force in [[], ["--force"]] {
        let outcome = try await sandbox.run(db: db, ["backup", target] + force)
        #expect(outcome.status == 65, "\(target) \(force): \(outcome)")
        #expect(
          outcome.stderr.hasPrefix("sessionctl: error: \(target): this is \(what), not a regular file"),
          "\(outcome.stderr)")
        var info = stat()
        let same = stat(target, &info) == 0 && info.st_mode & S_IFMT == type
        #expect(same, "\(target) is what it was")
        kept = kept && same && outcome.status == 65
      }
      return kept
    }
    var allRefused = true
    for (target, type, what) in targets { allRefused = try await refused(target, type, what) && allRefused }
    if getuid() == 0, allRefused, targets.count == 4 {
      #expect(try await refused("/dev/full", S_IFCHR, "a character device"))
    }
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter {
      $0.contains("backup-")
    }
    #expect(leftovers.isEmpty)
  }
}

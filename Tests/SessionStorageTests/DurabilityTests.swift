import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// `Durability.full` is `synchronous=FULL` on the connection that commits, and its commits
/// sync the WAL; `.normal` is `synchronous=NORMAL`, whose commits do not.
@Suite(.timeLimit(.minutes(10))) struct DurabilityTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// `PRAGMA synchronous` reads 2 for FULL, 1 for NORMAL.
  static func level(_ durability: SessionStore.Durability) -> Int64 {
    switch durability {
    case .full: 2
    case .normal: 1
    }
  }

  @Test(arguments: [SessionStore.Durability.full, .normal])
  func theWriterRunsAtTheDurabilityAskedFor(_ durability: SessionStore.Durability) throws {
    // On the connection that creates the file, and on one that opens it.
    let creator = try SessionStore(path: path, options: .init(durability: durability))
    #expect(try creator.requireFile().backend.writerInteger("PRAGMA synchronous") == Self.level(durability))
    try creator.blocking.logIn(as: "alice")
    #expect(try creator.requireFile().backend.writerInteger("PRAGMA synchronous") == Self.level(durability))
  }

  @Test func instancesOnOneFileEachWriteAtTheirOwnDurability() throws {
    let full = try SessionStore(path: path, options: .init(durability: .full))
    let normal = try SessionStore(path: path, options: .init(durability: .normal))
    // They share one writer, switched to each instance's level for its writes.
    for _ in 0..<2 {
      try normal.blocking.rename(to: "n\(UUID())")
      #expect(try normal.requireFile().backend.writerInteger("PRAGMA synchronous") == 1)
      try full.blocking.rename(to: "f\(UUID())")
      #expect(try full.requireFile().backend.writerInteger("PRAGMA synchronous") == 2)
    }
    // A store opened first as normal: a full instance after it still syncs.
    let path2 = dir.file("normal-first.db")
    let first = try SessionStore(path: path2, options: .init(durability: .normal))
    let second = try SessionStore(path: path2, options: .init(durability: .full))
    try second.blocking.logIn(as: "alice")
    #expect(try second.requireFile().backend.writerInteger("PRAGMA synchronous") == 2)
    #expect(try first.requireFile().backend.writerInteger("PRAGMA synchronous") == 1)
  }

  /// The `fsync`/`fdatasync` calls on the `-wal` of writes made by another process, under
  /// `strace`. This process holds the file open (the child's close is not the last, so it
  /// checkpoints nothing) and committed into the WAL (the child's commits append to it):
  /// every sync counted is a commit's.
  func walSyncs(_ executable: String, _ arguments: [String]) async throws -> (Strace.Run, Int) {
    let run = try await Strace.run(
      ["-e", "trace=fsync,fdatasync"], executable, arguments, environment: ["PATH": "/usr/bin:/bin"])
    #expect(run.status == 0, "\(run)")
    return (run, run.calls(of: ["fsync", "fdatasync"], onPathEndingWith: "-wal").count)
  }

  @Test func aCommitAtFullDurabilitySyncsTheWALAndOneAtNormalDoesNot() async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    // `sessionctl` writes at the default durability.
    let (login, loginSyncs) = try await walSyncs(
      ProcessRunner.product("sessionctl"), ["--db", path, "login", "bob"])
    #expect(loginSyncs >= 1, "sessionctl login committed without syncing the WAL: \(login)")
    let torture = ProcessRunner.product("sessiontorture")
    let (full, fullSyncs) = try await walSyncs(torture, ["write", "--db", path, "--count", "3"])
    #expect(fullSyncs >= 3, "three commits at full durability: \(full)")
    let (normal, normalSyncs) = try await walSyncs(
      torture, ["write", "--db", path, "--count", "3", "--normal-durability"])
    #expect(normalSyncs == 0, "commits at normal durability synced the WAL: \(normal)")
    #expect(try store.bounds().head == Cursor(8))
  }

  /// A new store and a backup are built beside their path and linked into place; the
  /// directory is then synced, so that the new name survives a power loss.
  @Test func aNewStoreAndABackupSyncTheirDirectory() async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    let directory = URL(fileURLWithPath: dir.path).resolvingSymlinksInPath().path
    let sessionctl = ProcessRunner.product("sessionctl")
    for arguments in [["--db", path, "login", "alice"], ["--db", path, "backup", dir.file("backup.db")]] {
      let run = try await Strace.run(
        ["-e", "trace=fsync"], sessionctl, arguments, environment: ["PATH": "/usr/bin:/bin"])
      #expect(run.status == 0, "\(run)")
      #expect(!run.calls(of: ["fsync"], onPathEndingWith: directory).isEmpty, "\(arguments): \(run)")
    }
  }
}

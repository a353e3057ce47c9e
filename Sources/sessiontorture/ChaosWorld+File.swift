import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// The steps that act on the SQLite file itself: its feed trigger dropped with the shell,
/// and a copy of the backup renamed over it.
extension ChaosWorld {
  /// Drops the trigger that records edits of an account (the feed's for any client but the
  /// library): a write through an instance and a new open must be refused (nothing written,
  /// nothing acknowledged); then the trigger is created again.
  func tamper(_ index: Int) throws {
    let trigger = try Self.sqlite3(
      path, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'accounts_external_update'")
    guard !trigger.isEmpty else {
      throw TortureFailure("the feed trigger is missing before the tamper step")
    }
    _ = try Self.sqlite3(path, "DROP TRIGGER accounts_external_update")
    defer { _ = try? Self.sqlite3(path, trigger + ";") }  // the repair; the check after the step verifies it
    if let store = instance(index), !store.isReadOnly {
      do {
        let entry = try store.blocking.rename(to: "tampered")
        throw TortureFailure(
          "a write on a file without its feed trigger succeeded: \(String(describing: entry))")
      } catch let error as SessionStorageError where error.code == .tamperedSchema {}
    }
    do {
      _ = try SessionStore(path: path + ".link", options: Self.options(origin: "tampered"))
    } catch let error as SessionStorageError where error.code == .tamperedSchema {
      return
    }
    // Sharing the open connections is allowed; a new process must refuse.
    let child = try Self.spawnChild(["read", "--db", path, "--count", "1"], stderr: .null)
    if Self.reap(child) == 0 { throw TortureFailure("a new process opened a file without its feed trigger") }
  }

  /// Renames a copy of the last backup over the file. Writes through the old connections
  /// must be refused; in-process followers end with a typed error within the bound; then
  /// every instance, follower and process is released (so nothing pairs the new file with
  /// the old WAL) and the driver goes on with the new file and the backup's model.
  func replace(_ index: Int) throws {
    guard let backedUp else { return }
    let copy = path + ".replacement"
    _ = try Self.sqlite3(backupPath, ".backup '\(copy)'")
    guard Glibc.rename(copy, path) == 0 else { throw TortureFailure("cannot rename over \(path)") }
    let renamed = Monotonic.now()
    if let store = instance(index), !store.isReadOnly {
      do {
        let entry = try store.blocking.rename(to: "lost")
        throw TortureFailure("a write into a replaced file succeeded: \(String(describing: entry))")
      } catch let error as SessionStorageError where error.code == .fileReplaced {}
    }
    // inotify reports the rename at once: live followers end within the bound.
    let live = followers.filter { $0.isLive && !$0.isProcess }
    let subscribers = live.compactMap { follower -> ChaosSubscriber? in
      if case .task(let subscriber) = follower.source { subscriber } else { nil }
    }
    while subscribers.contains(where: { $0.ending == nil }), Monotonic.now() < renamed + bound {
      usleep(1000)
    }
    let endings = subscribers.map(\.ending)
    tearDown()
    // SQLite neither checkpoints nor removes the WAL of a file that was moved away, so the
    // old -wal and -shm still sit beside the new file's name. With every process stopped
    // (the documented recovery) they belong to nothing: remove them before anyone opens
    // the new file, or it would be read with the old file's WAL.
    for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
    model = rewound(to: backedUp)
    instances.append(try backend.open(path, origin: "chaos-reopened"))
    let blind = endings.filter { $0 == nil }.count
    if blind > 0 {
      throw TortureFailure(
        "\(blind) subscriber(s) did not notice the replaced file within \(ChaosFollower.milliseconds(bound)) ms"
      )
    }
    for case .some(let ending) in endings {
      switch ending {
      case .feed(.historyRewritten), .replaced: continue
      default: throw TortureFailure("a subscriber of the replaced file ended with \(ending)")
      }
    }
  }
}

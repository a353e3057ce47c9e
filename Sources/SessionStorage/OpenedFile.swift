import Foundation
import Synchronization

/// The file a store opened, found by device and inode, and whether its path still names it.
/// A file replaced (renamed over, restored with `cp`) or deleted while open, or whose `-wal`
/// was deleted, is noticed here: this process's connections still read the old file, which
/// no other process sees, so every later read and write fails instead.
final class OpenedFile: Sendable {
  /// The path the store opened.
  let path: String
  private let identity: FileCheck.Identity
  /// Whether a `-wal` must sit beside the file while it is open (not for an immutable read).
  private let walExpected: Bool
  private let walPath: String
  /// Why the path no longer names the file, once noticed.
  private let replaced = Mutex<String?>(nil)

  init(path: String, identity: FileCheck.Identity, walExpected: Bool) {
    self.path = path
    self.identity = identity
    self.walExpected = walExpected
    walPath = path + "-wal"
  }

  /// Why the path no longer names the file, once ``noticeReplacement()`` found it.
  var replacement: String? { replaced.withLock { $0 } }

  /// Looks at the path again (`stat`, which opens nothing): true when it just found that
  /// the file was replaced or deleted. From then on every read fails, since this
  /// process's connections still read the old file, which no other process sees.
  func noticeReplacement() -> Bool {
    guard let reason = replacementReason() else { return false }
    return replaced.withLock { replaced in
      defer { replaced = replaced ?? reason }
      return replaced == nil
    }
  }

  /// Throws when the path no longer names the file the store opened.
  func requireSameFile() throws {
    if let reason = replacement ?? replacementReason() {
      throw SessionStorageError(.fileReplaced, reason + "; open the store again", path: path)
    }
  }

  private func replacementReason() -> String? {
    // An error here (the path is now a directory, an empty file…) means the same as
    // nothing there: not the file the store opened.
    switch try? FileCheck.identify(path, mayCreate: true) {
    case identity?:
      // SQLite deletes the -wal only when the last connection closes, and ours are open:
      // gone means deleted by hand, and our commits now go where no other process looks.
      walExpected && walPath.withCString({ access($0, F_OK) }) != 0
        ? "the -wal file beside it was deleted while the store had it open" : nil
    case .some: "the file was replaced: another file has its name now"
    case nil: "the file was deleted or cannot be found any more"
    }
  }
}

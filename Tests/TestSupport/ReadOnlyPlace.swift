import Foundation

/// A directory that cannot be written, even by root: a small tmpfs remounted read-only
/// (root), or a directory with mode 0555 (anyone else). Nil where neither can be made.
public final class ReadOnlyPlace: Sendable {
  /// The directory.
  public let path: String
  private let mounted: Bool

  /// Makes the directory inside `parent`, lets `prepare` fill it while it is writable,
  /// then makes it read-only.
  public init?(in parent: String, prepare: (String) throws -> Void) throws {
    path = parent + "/readonly"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    if getuid() == 0 {
      guard try ProcessRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", path]).status == 0
      else {
        return nil
      }
      mounted = true
      try prepare(path)
      guard try ProcessRunner.run("/bin/mount", ["-o", "remount,ro", path]).status == 0 else { return nil }
    } else {
      mounted = false
      try prepare(path)
      chmod(path, 0o555)
    }
  }

  /// A path inside the directory.
  public func file(_ name: String) -> String { path + "/" + name }

  deinit {
    if mounted {
      _ = try? ProcessRunner.run("/bin/umount", ["-l", path])
    } else {
      chmod(path, 0o755)
    }
  }
}

import Foundation

/// A directory that cannot be written, even by root: a small tmpfs remounted read-only
/// (root), or a directory with mode 0555 (anyone else). Nil where neither can be made.
/// It mounts with `mount(2)` itself, so that no child process is waited for.
public final class ReadOnlyPlace: Sendable {
  /// The directory.
  public let path: String
  private let mounted: Bool

  /// Makes the directory inside `parent`, lets `prepare` fill it while it is writable,
  /// then makes it read-only.
  public init?(in parent: String, prepare: (String) async throws -> Void) async throws {
    path = parent + "/readonly"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    if getuid() == 0 {
      guard mount("tmpfs", path, "tmpfs", 0, "size=4m") == 0 else { return nil }
      mounted = true
      try await prepare(path)
      // A file the preparation wrote may still be closing while the suite loads the machine:
      // the kernel refuses to make the mount read-only (EBUSY) until it is; ask again for up
      // to a minute (a hang guard, not a timing).
      let deadline = ContinuousClock.now + .seconds(60)
      while mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) != 0 {
        guard errno == EBUSY, ContinuousClock.now < deadline else { return nil }
        try await Task.sleep(for: .milliseconds(50))
      }
    } else {
      mounted = false
      try await prepare(path)
      chmod(path, 0o555)
    }
  }

  /// A path inside the directory.
  public func file(_ name: String) -> String { path + "/" + name }

  deinit {
    if mounted {
      umount2(path, Int32(MNT_DETACH))
    } else {
      chmod(path, 0o755)
    }
  }
}

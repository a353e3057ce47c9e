import Foundation

/// A fresh directory under /tmp, removed when the value is dropped.
public final class TemporaryDirectory: Sendable {
  /// The directory's absolute path.
  public let path: String

  /// Creates the directory.
  public init() throws {
    var template = Array((NSTemporaryDirectory() + "sessionstorage-XXXXXX").utf8CString)
    guard let created = mkdtemp(&template) else { throw POSIXError(.EIO) }
    path = String(cString: created)
  }

  /// A path inside the directory.
  public func file(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

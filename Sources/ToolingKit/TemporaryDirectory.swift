import Foundation

/// A fresh directory under the temporary directory, removed with everything in it when the
/// value is dropped: the scratch space of a test, a benchmark scenario or a script run.
package final class TemporaryDirectory: Sendable {
  /// The directory's absolute path.
  package let path: String

  /// Creates `$TMPDIR/PREFIX-XXXXXX`.
  /// - Throws: `POSIXError` when it cannot be created.
  package init(prefix: String = "sessionstorage") throws {
    var template = Array((NSTemporaryDirectory() + "\(prefix)-XXXXXX").utf8CString)
    guard let created = mkdtemp(&template) else {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    path = String(cString: created)
  }

  /// A path inside the directory.
  package func file(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

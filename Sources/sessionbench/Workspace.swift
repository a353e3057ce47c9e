import Foundation
import SessionStorage

/// A scenario's scratch space: a fresh directory under the temporary directory with one
/// sub-directory for our store and one for the baseline's file, so that a watcher on one
/// directory never wakes for the other's writes. Removed when dropped.
final class Workspace {
  let root: String

  init(_ scenario: String) throws {
    var template = Array((NSTemporaryDirectory() + "sessionbench-\(scenario)-XXXXXX").utf8CString)
    guard let created = mkdtemp(&template) else { throw BenchError("cannot create a temporary directory") }
    root = String(cString: created)
    for side in ["ours", "raw"] {
      try FileManager.default.createDirectory(atPath: root + "/" + side, withIntermediateDirectories: false)
    }
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  /// Our store's file.
  var ours: String { root + "/ours/session.db" }

  /// The baseline's file.
  var raw: String { root + "/raw/session.db" }

  /// Creates the baseline's file with the store's schema: a `SessionStore` opens it once
  /// and applies the migrations; from then on only raw `sqlite3_*` calls touch it.
  func createRawSchema() throws {
    _ = try SessionStore(path: raw, options: .init(origin: "sessionbench"))
  }
}

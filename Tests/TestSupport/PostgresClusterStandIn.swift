import Foundation
import Testing

// TEMPORARY stand-in for the pgcluster branch's PostgresCluster (same API), reading only
// $SESSIONSTORAGE_TEST_POSTGRES_URL; deleted when that branch is merged.
/// The test server (stand-in).
public struct PostgresCluster: Sendable {
  /// The server of $SESSIONSTORAGE_TEST_POSTGRES_URL; skips without it.
  public static func shared() throws -> PostgresCluster {
    guard let url = ProcessInfo.processInfo.environment["SESSIONSTORAGE_TEST_POSTGRES_URL"] else {
      try Test.cancel("SESSIONSTORAGE_TEST_POSTGRES_URL is not set")
    }
    return PostgresCluster(url: url, socketURL: url)
  }

  /// TCP URL.
  public var url: String
  /// Socket URL.
  public var socketURL: String

  /// A URL with a fresh schema.
  public func freshStoreURL(socket: Bool = false) -> String {
    let base = socket ? socketURL : url
    let name = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    return base + (base.contains("?") ? "&" : "?") + "schema=" + name
  }

  /// Runs SQL through psql.
  public func psql(_ sql: String, schema: String? = nil) throws -> String {
    let prefix = schema.map { "SET search_path TO \"\($0)\";\n" } ?? ""
    let result = try ProcessRunner.run(
      "/usr/bin/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", prefix + sql])
    guard result.status == 0 else { throw SQLite3ShellError(message: "psql: \(result.stderr)") }
    return result.stdout
  }
}

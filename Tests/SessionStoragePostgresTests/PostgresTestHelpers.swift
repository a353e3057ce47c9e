import TestSupport

/// `prefix_` and random lowercase letters: an origin that is also a role name.
func uniqueName(_ prefix: String) -> String {
  prefix + "_" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
}

/// The process ids of the backends whose `application_name` is `name`.
func backends(of name: String, on cluster: PostgresCluster) async throws -> [String] {
  try await cluster.query("SELECT pid FROM pg_stat_activity WHERE application_name = '\(name)' ORDER BY pid")
    .split(separator: "\n").map(String.init)
}

extension PostgresCluster {
  /// ``psql(_:schema:socket:timeout:)`` under a shorter name.
  @discardableResult
  func query(_ sql: String, schema: String? = nil) async throws -> String {
    try await psql(sql, schema: schema)
  }
}

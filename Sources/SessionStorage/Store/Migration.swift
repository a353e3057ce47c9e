/// One schema step of a backend (`migrations/NNNN_name.sql` for a SQLite file), embedded
/// at build time.
public struct Migration: Sendable, Equatable {
  /// The number in the file name; migrations apply in this order.
  public let version: Int
  /// The file name without `.sql`.
  public let name: String
  /// SHA-256 of the file, hex; recorded when applied and compared on every open.
  public let checksum: String
  /// The SQL text.
  package let sql: String

  /// A migration as the EmbedMigrations plugin writes it.
  package init(version: Int, name: String, checksum: String, sql: String) {
    self.version = version
    self.name = name
    self.checksum = checksum
    self.sql = sql
  }
}

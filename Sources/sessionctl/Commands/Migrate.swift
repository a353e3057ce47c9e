import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl migrate`: creates the file if needed and lists the migrations applied.
  struct Migrate: SessionCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "migrate", abstract: "Create the file if needed and apply pending migrations.",
      discussion: "Prints each migration it applied, or that the file is up to date.")

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let existed = location.exists
      let store = try context.openForWriting(location)
      // A PostgreSQL schema counts as created when its first migration was applied now.
      let created = location.isPostgres ? store.appliedMigrations.contains { $0.version == 1 } : !existed
      if created || !store.appliedMigrations.isEmpty {
        context.commitment.record(
          "the migrations are committed all the same (\(store.appliedMigrations.count) applied)")
      }
      try context.output.write(
        context.presenter.migration(
          path: location.display, created: created, applied: store.appliedMigrations))
      return .success
    }
  }
}

extension Presenter {
  /// `migrate`.
  func migration(path: String, created: Bool, applied: [Migration]) -> [String] {
    if json {
      let migrations: [JSONValue] = applied.map {
        ["version": .int(Int64($0.version)), "name": .string($0.name), "checksum": .string($0.checksum)]
      }
      let value: JSONValue = [
        "type": "migrate", "path": .string(path), "created": .bool(created), "applied": .array(migrations),
      ]
      return [value.encoded]
    }
    var lines = created ? ["created \(Self.display(path))"] : []
    lines += applied.map { "applied \($0.name) (sha256 \($0.checksum.prefix(12)))" }
    if applied.isEmpty { lines.append("\(Self.display(path)) is up to date") }
    return lines
  }
}

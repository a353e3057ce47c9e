import Foundation
import PackagePlugin

/// Compiles `migrations/*.sql` into a Swift source file of the target, so the schema
/// travels inside the binary and nothing is read from disk at run time. The target
/// SessionStoragePostgres embeds `migrations/postgres/*.sql` instead, as SessionStorage's
/// `Migration` values (the file imports SessionStorage).
@main
struct EmbedMigrations: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
    let postgres = target.name == "SessionStoragePostgres"
    let directory = context.package.directoryURL.appending(
      path: postgres ? "migrations/postgres" : "migrations")
    let files = try FileManager.default.contentsOfDirectory(
      at: directory, includingPropertiesForKeys: nil
    )
    .filter { $0.pathExtension == "sql" }
    .sorted { $0.lastPathComponent < $1.lastPathComponent }
    let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
    // The SQLite store also embeds its migration ledger's table and the schema the
    // migrations leave, as this machine's SQLite stores it.
    let ledger = directory.appending(path: "ledger/schema_migrations.sql")
    let options = postgres ? ["--import", "SessionStorage"] : ["--sqlite-ledger", ledger.path]
    return [
      .buildCommand(
        displayName: "Embedding \(files.count) migrations into \(target.name)",
        executable: try context.tool(named: "EmbedMigrationsTool").url,
        arguments: options + [output.path] + files.map(\.path),
        inputFiles: files + (postgres ? [] : [ledger]),
        outputFiles: [output]
      )
    ]
  }
}

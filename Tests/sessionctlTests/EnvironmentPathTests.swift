import Foundation
import Testing

/// `HOME`, `XDG_DATA_HOME` and `SESSIONCTL_DB` as the environment hands them over: paths
/// through missing directories, and bytes that are not UTF-8.
@Suite(.timeLimit(.minutes(10))) struct EnvironmentPathTests {
  /// A missing directory followed by `..` is created, as `mkdir -p` would, and the store
  /// goes where the path leads.
  @Test(arguments: ["HOME", "XDG_DATA_HOME"])
  func aMissingDirectoryFollowedByDotDot(_ variable: String) async throws {
    let sandbox = try Sandbox()
    let login = try await sandbox.run(
      ["login", "alice"], environment: [variable: sandbox.home + "/missing/.."])
    #expect(login.status == 0, "\(login)")
    let file =
      variable == "HOME" ? sandbox.defaultDatabase : sandbox.home + "/sessionctl/session.db"
    #expect(sandbox.exists(file))
    #expect(try await sandbox.sqlite(file, "SELECT username FROM session") == "alice")
  }
}

import Foundation
import SessionStorage
import TestSupport
import Testing

/// Missing directories are created as `mkdir -p` creates them, whatever the path spells:
/// `..` after a missing directory, `.`, repeated slashes.
@Suite(.timeLimit(.minutes(10))) struct DirectoryCreationTests {
  @Test(arguments: ["missing/../s.db", "a/missing/../../b/./c//s.db", "missing/..//x/../s.db"])
  func aMissingDirectoryFollowedByDotDotIsCreatedThenLeft(_ relative: String) throws {
    let dir = try TemporaryDirectory()
    let path = dir.path + "/" + relative
    let store = try SessionStore(path: path, options: .init(createsMissingDirectories: true))
    try store.blocking.logIn(as: "alice")
    let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
    #expect(FileManager.default.fileExists(atPath: standardized))
    #expect(try SessionStore(path: standardized, options: .init(readOnly: true)).state.username == "alice")
  }

  /// The default location under a `HOME` or `XDG_DATA_HOME` that walks through a missing
  /// directory: the directories are created (0700) and checked, then the store.
  @Test(arguments: ["HOME", "XDG_DATA_HOME"])
  func theDefaultLocationThroughAMissingDirectoryIsCreated(_ variable: String) throws {
    let dir = try TemporaryDirectory()
    chmod(dir.path, 0o700)
    let location = try SessionStore.Location.resolve(environment: [variable: dir.path + "/missing/.."])
    let store = try SessionStore(location: location, options: .init(origin: "test"))
    try store.blocking.logIn(as: "alice")
    let expected = dir.path + (variable == "HOME" ? "/.local/share" : "") + "/sessionctl/session.db"
    #expect(FileManager.default.fileExists(atPath: expected))
    var info = stat()
    #expect(stat(dir.path + "/missing", &info) == 0 && info.st_mode & 0o777 == 0o700)
  }
}

import Foundation
import SessionStorage
import TestSupport
import Testing

/// `SessionStore.defaultPath()`: the file apps and `sessionctl` share when nobody names another.
@Suite struct DefaultPathTests {
  @Test(arguments: [
    (["XDG_DATA_HOME": "/xdg", "HOME": "/home/a"], "/xdg/sessionctl/session.db"),
    (["XDG_DATA_HOME": "/xdg/", "HOME": "/home/a"], "/xdg/sessionctl/session.db"),
    (["XDG_DATA_HOME": "relative", "HOME": "/home/a"], "/home/a/.local/share/sessionctl/session.db"),
    (["XDG_DATA_HOME": "", "HOME": "/home/a"], "/home/a/.local/share/sessionctl/session.db"),
    (["HOME": "/"], "/.local/share/sessionctl/session.db"),
  ])
  func followsXDGThenHome(_ environment: [String: String], _ expected: String) throws {
    #expect(try SessionStore.defaultPath(environment: environment) == expected)
  }

  @Test(arguments: [[:], ["HOME": ""], ["HOME": "relative"], ["XDG_DATA_HOME": "relative"]])
  func withoutAnAbsoluteDirectoryThereIsNone(_ environment: [String: String]) {
    #expect(throws: SessionStorageError.self) { try SessionStore.defaultPath(environment: environment) }
  }

  /// A store creates its file, not directories, unless asked; asked, it creates them 0700.
  @Test func missingDirectoriesAreNamedOrCreatedPrivately() throws {
    let dir = try TemporaryDirectory()
    let path = try SessionStore.defaultPath(environment: ["HOME": dir.path])
    do {
      _ = try SessionStore(path: path)
      Issue.record("a store created missing directories without being asked")
    } catch SessionStorageError.Code.notFound {
      // The code is a catch pattern; the message names the directory.
    }
    #expect(!FileManager.default.fileExists(atPath: dir.file(".local")))
    let store = try SessionStore(path: path, options: .init(createsMissingDirectories: true))
    try store.logIn(as: "alice")
    for directory in [".local", ".local/share", ".local/share/sessionctl"] {
      var info = stat()
      #expect(stat(dir.file(directory), &info) == 0)
      #expect(info.st_mode & 0o777 == 0o700, "\(directory)")
    }
  }
}

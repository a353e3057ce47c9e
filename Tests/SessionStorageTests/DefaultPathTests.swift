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

  /// A relative variable is ignored as if unset, and the error says it is relative.
  @Test(arguments: [
    ([:], "no default location: HOME is not set, nor XDG_DATA_HOME"),
    (["HOME": "home"], "HOME is a relative path and XDG_DATA_HOME is not set; set HOME to the absolute path"),
    (
      ["HOME": "", "XDG_DATA_HOME": "data"],
      "HOME is not set and XDG_DATA_HOME is a relative path; set either"
    ),
    (["HOME": "home", "XDG_DATA_HOME": "data"], "HOME and XDG_DATA_HOME are relative paths; set HOME to"),
  ])
  func theErrorSaysWhichVariableIsRelative(_ environment: [String: String], _ message: String) {
    let error = #expect(throws: SessionStorageError.self) {
      try SessionStore.defaultPath(environment: environment)
    }
    #expect(error?.code == .notFound)
    #expect(error?.message.contains(message) == true, "\(String(describing: error))")
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
    try store.blocking.logIn(as: "alice")
    for directory in [".local", ".local/share", ".local/share/sessionctl"] {
      var info = stat()
      #expect(stat(dir.file(directory), &info) == 0)
      #expect(info.st_mode & 0o777 == 0o700, "\(directory)")
    }
  }

  /// `requirePrivateDirectory(for:creatingMissing:)`: creates what is missing (0700) and
  /// passes a chain of the user's own directories; refuses a directory others may write
  /// (also one reached through a symbolic link, also the directory a link to the file leads
  /// to) with `unsafeDirectory`, creating nothing; a loop of links is an error, not a hang.
  @Test func privateDirectoriesPassAndOthersAreRefusedNamingTheDirectory() throws {
    let dir = try TemporaryDirectory()
    chmod(dir.path, 0o700)
    let path = try SessionStore.defaultPath(environment: ["HOME": dir.path])
    try SessionStore.requirePrivateDirectory(for: path)
    #expect(!FileManager.default.fileExists(atPath: dir.file(".local")), "nothing is created unless asked")
    try SessionStore.requirePrivateDirectory(for: path, creatingMissing: true)
    var info = stat()
    #expect(stat(dir.file(".local/share/sessionctl"), &info) == 0 && info.st_mode & 0o777 == 0o700)

    let open = dir.file("open")
    try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
    chmod(open, 0o777)
    let cases = [
      (open + "/sub/session.db", open, "its group and others"),  // the missing part is not made
      (dir.file("link/session.db"), open, "its group and others"),
      (dir.file("file-link"), open, "its group and others"),
    ]
    #expect(symlink(open, dir.file("link")) == 0)
    #expect(symlink(open + "/session.db", dir.file("file-link")) == 0)
    chmod(dir.file(".local/share/sessionctl"), 0o720)
    let groupWritable = (
      dir.file(".local/share/sessionctl/session.db"), dir.file(".local/share/sessionctl"), "its group"
    )
    for (file, directory, who) in cases + [groupWritable] {
      let refused = #expect(throws: SessionStorageError.self) {
        try SessionStore.requirePrivateDirectory(for: file, creatingMissing: true)
      }
      #expect(refused?.code == .unsafeDirectory)
      #expect(refused?.path == file)
      #expect(
        refused?.message.contains("the directory \(directory) can be written by \(who) (mode 07") == true,
        "\(String(describing: refused))")
    }
    #expect(!FileManager.default.fileExists(atPath: open + "/sub"))

    #expect(symlink(dir.file("loop-b"), dir.file("loop-a")) == 0)
    #expect(symlink(dir.file("loop-a"), dir.file("loop-b")) == 0)
    #expect(throws: SessionStorageError.self) {
      try SessionStore.requirePrivateDirectory(for: dir.file("loop-a/session.db"))
    }
  }
}

/// `SessionStore.Location`: the lookup `sessionctl` makes (a named path, else
/// `$SESSIONCTL_DB`, else the default path), and how `init(location:options:)` opens each.
@Suite struct LocationTests {
  static let rules: [(String?, [String: String], String, SessionStore.Location.Source)] = [
    ("named.db", ["SESSIONCTL_DB": "/env.db", "HOME": "/home/a"], "named.db", .named),
    (nil, ["SESSIONCTL_DB": "/env.db", "XDG_DATA_HOME": "/xdg", "HOME": "/home/a"], "/env.db", .environment),
    (
      nil, ["SESSIONCTL_DB": "", "XDG_DATA_HOME": "/xdg", "HOME": "/a"], "/xdg/sessionctl/session.db",
      .defaultPath
    ),
    (
      nil, ["XDG_DATA_HOME": "relative", "HOME": "/a"], "/a/.local/share/sessionctl/session.db", .defaultPath
    ),
    (nil, ["SESSIONCTL_DB": "postgresql://u@h/db"], "postgresql://u@h/db", .environment),
  ]

  @Test(arguments: rules)
  func aNamedPathThenTheVariableThenTheDefault(
    _ named: String?, _ environment: [String: String], _ path: String, _ source: SessionStore.Location.Source
  ) throws {
    let location = try SessionStore.Location.resolve(named: named, environment: environment)
    #expect(location == SessionStore.Location(path: path, source: source))
    #expect(location.urlScheme == (path.hasPrefix("postgresql:") ? "postgresql" : nil))
  }

  @Test func anEmptyNamedPathOrNoRuleIsAnError() {
    let empty = #expect(throws: SessionStorageError.self) {
      try SessionStore.Location.resolve(named: "", environment: ["HOME": "/home/a"])
    }
    #expect(empty?.code == .invalidArgument)
    let none = #expect(throws: SessionStorageError.self) {
      try SessionStore.Location.resolve(environment: ["SESSIONCTL_DB": "", "HOME": "relative"])
    }
    #expect(none?.code == .notFound)
  }

  /// The default location is created privately, and refused when others may write its
  /// directory; the same file named explicitly is used as given.
  @Test func theDefaultLocationIsCheckedANamedOneIsUsedAsGiven() throws {
    let dir = try TemporaryDirectory()
    chmod(dir.path, 0o700)
    let location = try SessionStore.Location.resolve(environment: ["HOME": dir.path])
    #expect(location.source == .defaultPath)
    let reader = #expect(throws: SessionStorageError.self) {
      try SessionStore(location: location, options: .init(readOnly: true))
    }
    #expect(reader?.code == .notFound)
    #expect(!FileManager.default.fileExists(atPath: dir.file(".local")), "a reader creates nothing")
    try SessionStore(location: location).blocking.logIn(as: "alice")
    var info = stat()
    #expect(stat(dir.file(".local/share/sessionctl"), &info) == 0 && info.st_mode & 0o777 == 0o700)

    chmod(dir.file(".local/share/sessionctl"), 0o770)
    for readOnly in [false, true] {
      let refused = #expect(throws: SessionStorageError.self) {
        try SessionStore(location: location, options: .init(readOnly: readOnly))
      }
      #expect(refused?.code == .unsafeDirectory)
    }
    let named = try SessionStore.Location.resolve(named: location.path, environment: ["HOME": dir.path])
    #expect(try SessionStore(location: named).state.username == "alice")
    let variable = try SessionStore.Location.resolve(environment: ["SESSIONCTL_DB": location.path])
    #expect(try SessionStore(location: variable, options: .init(readOnly: true)).state.username == "alice")
  }

  /// A PostgreSQL URL in `$SESSIONCTL_DB` is refused by the file store, saying what to use,
  /// never showing the URL (it may hold a password), and creating nothing.
  @Test func aPostgresURLIsNotOpenedAsAFile() throws {
    let url = "postgresql://u:secret@127.0.0.1:1/db"
    let location = try SessionStore.Location.resolve(environment: ["SESSIONCTL_DB": url])
    #expect(location.urlScheme == "postgresql")
    let refused = #expect(throws: SessionStorageError.self) { try SessionStore(location: location) }
    #expect(refused?.code == .invalidArgument)
    #expect(
      refused?.description.contains("postgresql:// URL, not a file") == true, "\(String(describing: refused))"
    )
    #expect(refused?.description.contains("secret") == false)
    #expect(!FileManager.default.fileExists(atPath: "postgresql:"))
  }

  /// `~` is not expanded: a path that begins with it and leads to nothing is refused with a
  /// message that says so, for reading and writing (creating directories too), and nothing is
  /// created.
  @Test(arguments: ["~/session.db", "~alice/session.db", "~"])
  func aPathBeginningWithATildeIsNotExpanded(_ path: String) throws {
    #expect(
      !FileManager.default.fileExists(atPath: "~"),
      "a directory named ~ in \(FileManager.default.currentDirectoryPath)")
    let options: [SessionStore.FileOptions] = [
      .init(), .init(readOnly: true), .init(createsMissingDirectories: true),
    ]
    for options in options {
      let refused = #expect(throws: SessionStorageError.self) {
        try SessionStore(path: path, options: options)
      }
      #expect(refused?.code == .notFound)
      #expect(refused?.path == path)
      #expect(
        refused?.message.hasPrefix(
          "no such file, and '~' is not expanded: a path is used as given (a shell expands '~' only unquoted "
            + "at the start of a word)") == true, "\(String(describing: refused))")
    }
    let location = try SessionStore.Location.resolve(environment: ["SESSIONCTL_DB": path])
    #expect(throws: SessionStorageError.self) { try SessionStore(location: location) }
    #expect(!FileManager.default.fileExists(atPath: "~"))
    #expect(!FileManager.default.fileExists(atPath: String(path.split(separator: "/")[0])))
  }

  /// A backup to, or a restore from, a path that begins with `~` and leads to nothing is
  /// refused the same way: nothing is written, the store is not changed.
  @Test func backupsTakeATildeAsGivenToo() throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("s.db"))
    try store.blocking.logIn(as: "alice")
    for refused in [
      #expect(throws: SessionStorageError.self) { try store.requireFile().backup(to: "~/b.db") },
      #expect(throws: SessionStorageError.self) { try store.requireFile().restore(from: "~/b.db") },
    ] {
      #expect(refused?.code == .notFound)
      #expect(refused?.message.contains("'~' is not expanded") == true, "\(String(describing: refused))")
    }
    #expect(!FileManager.default.fileExists(atPath: "~"))
    #expect(try store.state.username == "alice")
  }
}

import Foundation
import SessionStorage
import Testing

/// `--db=PATH` / `--db PATH`, then `$SESSIONCTL_DB`, then `$XDG_DATA_HOME`, then `$HOME`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DatabasePathTests {
  /// Runs `login` with the given setup and returns the file it wrote.
  func writtenFile(_ sandbox: Sandbox, _ arguments: [String], environment: [String: String]) async throws
    -> String?
  {
    let outcome = try await sandbox.run(arguments + ["login", "alice"], environment: environment)
    #expect(outcome.status == 0, "\(outcome)")
    let candidates = [
      sandbox.path("option.db"), sandbox.path("equals.db"), sandbox.path("env.db"),
      sandbox.path("xdg/sessionctl/session.db"), sandbox.defaultDatabase,
    ]
    let written = candidates.filter { sandbox.exists($0) }
    #expect(written.count == 1, "\(written)")
    return written.first
  }

  @Test func optionBeatsEnvironmentBeatsXDGBeatsHome() async throws {
    let everything = ["SESSIONCTL_DB": "ENV", "XDG_DATA_HOME": "XDG"]
    let cases: [([String], [String: String], String)] = [
      (["--db", "option.db"], everything, "option.db"),
      (["--db=equals.db"], everything, "equals.db"),
      ([], everything, "env.db"),
      ([], ["XDG_DATA_HOME": "XDG"], "xdg/sessionctl/session.db"),
      ([], [:], "home/.local/share/sessionctl/session.db"),
      ([], ["SESSIONCTL_DB": "", "XDG_DATA_HOME": ""], "home/.local/share/sessionctl/session.db"),
      ([], ["XDG_DATA_HOME": "relative/xdg"], "home/.local/share/sessionctl/session.db"),
    ]
    for (arguments, environment, expected) in cases {
      let sandbox = try Sandbox()
      let resolved = environment.mapValues {
        $0 == "ENV" ? sandbox.path("env.db") : $0 == "XDG" ? sandbox.path("xdg") : $0
      }
      let absolute = arguments.map {
        $0.hasSuffix(".db")
          ? $0.replacingOccurrences(of: "option.db", with: sandbox.path("option.db")).replacingOccurrences(
            of: "=equals.db", with: "=" + sandbox.path("equals.db")) : $0
      }
      let written = try await writtenFile(sandbox, absolute, environment: resolved)
      #expect(written == sandbox.path(expected), "\(arguments) \(environment)")
    }
  }

  /// An app that resolves its store with `SessionStore.Location.resolve()` and opens it with
  /// `SessionStore(location:)` writes the file `sessionctl status` then reads, whatever the
  /// environment says.
  @Test(arguments: [
    ["SESSIONCTL_DB": "ENV", "XDG_DATA_HOME": "XDG"], ["XDG_DATA_HOME": "XDG"], [:],
    ["SESSIONCTL_DB": "", "XDG_DATA_HOME": ""], ["XDG_DATA_HOME": "relative/xdg"],
  ])
  func anAppAndSessionctlUseTheSameFile(_ rules: [String: String]) async throws {
    let sandbox = try Sandbox()
    let environment = sandbox.environment.merging(
      rules.mapValues { $0 == "ENV" ? sandbox.path("env.db") : $0 == "XDG" ? sandbox.path("xdg") : $0 }
    ) { $1 }
    let location = try SessionStore.Location.resolve(environment: environment)
    let expected =
      rules["SESSIONCTL_DB"] == "ENV"
      ? sandbox.path("env.db")
      : rules["XDG_DATA_HOME"] == "XDG" ? sandbox.path("xdg/sessionctl/session.db") : sandbox.defaultDatabase
    #expect(location.path == expected)
    let store = try SessionStore(location: location, options: .init(origin: "MyApp"))
    try await store.logIn(as: "alice")
    let status = try await sandbox.run(["status"], environment: environment)
    #expect(status.status == 0, "\(status)")
    #expect(status.lines.contains("active     alice"), "\(status)")
    #expect(status.lines.last == "database   \(location.path)")
  }

  /// `--db '~/s.db'` and `SESSIONCTL_DB='~/s.db'` (quoted: the shell left the `~`) name a
  /// directory `~`: when nothing is there, every command says that sessionctl does not
  /// expand `~` (exit 1) and creates nothing. What is there is used as given.
  @Test func aPathBeginningWithATildeIsNotExpanded() async throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path("cwd")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    func run(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> Outcome {
      try await sandbox.runProgram(
        "/bin/bash", ["-c", #"cd "$0" && exec "$@""#, directory, Sandbox.sessionctl] + arguments,
        environment: sandbox.environment.merging(environment) { $1 })
    }
    let cases: [([String], [String: String], String)] = [
      (["--db", "~/s.db", "login", "alice"], [:], "--db"),
      (["--db", "~/s.db", "status"], [:], "--db"),
      (["--db=~", "migrate"], [:], "--db"),
      (["compact", "--keep", "1"], ["SESSIONCTL_DB": "~/s.db"], "$SESSIONCTL_DB"),
      (["login", "alice"], ["SESSIONCTL_DB": "~alice/s.db"], "$SESSIONCTL_DB"),
    ]
    for (arguments, environment, rule) in cases {
      let outcome = try await run(arguments, environment)
      let path = environment["SESSIONCTL_DB"] ?? (arguments[0] == "--db=~" ? "~" : "~/s.db")
      #expect(outcome.status == 1, "\(arguments): \(outcome)")
      #expect(outcome.stdout == "")
      #expect(
        outcome.stderr
          == "sessionctl: error: \(path): no such file, and sessionctl does not expand '~' in \(rule) (a shell "
          + "expands it only unquoted at the start of a word): write \"$HOME/…\" instead, or './~…' for a "
          + "name that begins with '~'; nothing was created\n", "\(arguments)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "\(arguments)")
      #expect(!sandbox.exists(sandbox.home + "/s.db") && !sandbox.exists(sandbox.home + "/.local"))
    }
    // A directory that is really named `~`: the path leads somewhere, and is used as given.
    #expect(try await run(["--db", "./~/s.db", "migrate"]).status == 1, "no directory ~ yet")
    try FileManager.default.createDirectory(atPath: directory + "/~", withIntermediateDirectories: false)
    #expect(try await run(["--db", "./~/s.db", "login", "alice"]).status == 0)
    let status = try await run(["--db", "~/s.db", "status"])
    #expect(status.status == 0, "\(status)")
    #expect(status.lines.last == "database   ~/s.db")
  }

  @Test func theOptionWorksAfterTheCommandToo() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("after.db")
    #expect(try await sandbox.run(["login", "alice", "--db", db]).status == 0)
    #expect(try await sandbox.run(["status", "--db=\(db)"]).lines.last == "database   \(db)")
  }

  @Test func statusNamesTheFileItRead() async throws {
    let sandbox = try Sandbox()
    sandbox.environment["SESSIONCTL_DB"] = sandbox.path("env.db")
    _ = try await sandbox.run(["login", "alice"])
    #expect(try await sandbox.run(["status"]).lines.last == "database   \(sandbox.path("env.db"))")
  }

  @Test func theDefaultDirectoryIsCreatedPrivatelyOnTheFirstWrite() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(["status"]).status == 1)
    #expect(!sandbox.exists(sandbox.home + "/.local"))
    #expect(try await sandbox.run(["logout"]).status == 0)
    #expect(sandbox.mode(sandbox.home + "/.local") == 0o700)
    #expect(sandbox.mode(sandbox.home + "/.local/share") == 0o700)
    #expect(sandbox.mode(sandbox.home + "/.local/share/sessionctl") == 0o700)
    #expect(sandbox.mode(sandbox.defaultDatabase) == 0o600)

    let xdg = sandbox.path("data")
    #expect(try await sandbox.run(["migrate"], environment: ["XDG_DATA_HOME": xdg]).status == 0)
    #expect(sandbox.mode(xdg) == 0o700)
    #expect(sandbox.mode(xdg + "/sessionctl") == 0o700)
  }

  @Test func anExplicitPathIsUsedAsGiven() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("no/such/dir/s.db")
    let outcome = try await sandbox.run(db: db, ["login", "alice"])
    #expect(outcome.status == 1)
    #expect(
      outcome.stderr.hasPrefix(
        "sessionctl: error: \(db): the directory \(sandbox.path("no/such/dir")) does not exist "
          + "(a store creates its file, not directories)\n"))
    #expect(!sandbox.exists(sandbox.path("no")))
  }

  /// A relative path names a file in the current directory, one-character names included
  /// (`NSString.deletingLastPathComponent` traps on those: the fuzzer's `--db -` ended with
  /// SIGILL).
  @Test(arguments: ["a", "-", "s.db", "sub/s.db"])
  func aRelativePathIsAFileInTheCurrentDirectory(_ name: String) async throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path("cwd")
    try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
    let outcome = try await sandbox.runProgram(
      "/bin/bash",
      ["-c", #"cd "$0" && exec "$1" --db "$2" login alice"#, directory, Sandbox.sessionctl, name],
      environment: sandbox.environment)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(sandbox.exists(directory + "/" + name))
  }

  @Test func withoutAnyRuleThereIsNoPath() async throws {
    let sandbox = try Sandbox()
    sandbox.environment = ["PATH": "/usr/bin:/bin"]
    let outcome = try await sandbox.run(["status"])
    #expect(outcome.status == 1)
    #expect(
      outcome.stderr
        == "sessionctl: error: no database path: pass '--db PATH' or set SESSIONCTL_DB (no default location: HOME is not set, nor XDG_DATA_HOME)\n"
    )
  }

  /// A relative HOME (or XDG_DATA_HOME) is ignored, as if unset: the message says it is
  /// relative and what to set, not that it is not set.
  @Test(arguments: [
    (
      ["HOME": "home"],
      "HOME is a relative path and XDG_DATA_HOME is not set; set HOME to the absolute path of your home directory"
    ),
    (
      ["XDG_DATA_HOME": "data"],
      "HOME is not set and XDG_DATA_HOME is a relative path; set either to an absolute path"
    ),
    (
      ["HOME": "home", "XDG_DATA_HOME": "data"],
      "HOME and XDG_DATA_HOME are relative paths; set HOME to the absolute path of your home directory"
    ),
  ])
  func aRelativeHomeIsNamedAsRelative(_ variables: [String: String], _ why: String) async throws {
    let sandbox = try Sandbox()
    sandbox.environment = ["PATH": "/usr/bin:/bin"].merging(variables) { $1 }
    let outcome = try await sandbox.run(["login", "alice"])
    #expect(outcome.status == 1)
    #expect(
      outcome.stderr
        == "sessionctl: error: no database path: pass '--db PATH' or set SESSIONCTL_DB (no default location: \(why))\n"
    )
  }

  /// How a default directory that is not the user's own came to be, and what the refusal
  /// names: the directory actually used (links followed) and its owner or mode.
  struct Planted: CustomTestStringConvertible, Sendable {
    var name: String
    /// Whether it needs another user (`chown nobody`: root only).
    var needsRoot: Bool
    /// Makes it in the sandbox; returns the environment to add and the directory the
    /// refusal must name.
    var plant: @Sendable (Sandbox) throws -> (environment: [String: String], directory: String)
    /// What the refusal must say about that directory.
    var reason: String
    var testDescription: String { name }
  }

  /// Creates `path` (and its parents) with `mode`, owned by `uid`.
  static func directory(_ path: String, mode: mode_t, owner uid: uid_t = getuid()) throws -> String {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    chmod(path, mode)
    if uid != getuid() { #expect(chown(path, uid, gid_t(uid)) == 0) }
    return path
  }

  static let nobody: uid_t = 65534

  static let planted: [Planted] = [
    Planted(
      name: "a symbolic link to a world-writable directory someone else owns", needsRoot: true,
      plant: { sandbox in
        let elsewhere = try directory(sandbox.path("planted"), mode: 0o777, owner: nobody)
        try FileManager.default.createDirectory(
          atPath: sandbox.home + "/.local/share", withIntermediateDirectories: true)
        #expect(symlink(elsewhere, sandbox.home + "/.local/share/sessionctl") == 0)
        return ([:], elsewhere)
      }, reason: "belongs to uid 65534"),
    Planted(
      name: "a symbolic link to a private directory someone else owns", needsRoot: true,
      plant: { sandbox in
        let elsewhere = try directory(sandbox.path("planted"), mode: 0o755, owner: nobody)
        try FileManager.default.createDirectory(
          atPath: sandbox.home + "/.local/share", withIntermediateDirectories: true)
        #expect(symlink(elsewhere, sandbox.home + "/.local/share/sessionctl") == 0)
        return ([:], elsewhere)
      }, reason: "belongs to uid 65534"),
    Planted(
      name: "a directory someone else owns", needsRoot: true,
      plant: { sandbox in
        ([:], try directory(sandbox.home + "/.local/share/sessionctl", mode: 0o700, owner: nobody))
      }, reason: "belongs to uid 65534"),
    Planted(
      name: "a parent someone else owns, the directory not made yet", needsRoot: true,
      plant: { sandbox in
        ([:], try directory(sandbox.home + "/.local/share", mode: 0o755, owner: nobody))
      }, reason: "belongs to uid 65534"),
    Planted(
      name: "XDG_DATA_HOME's directory a symbolic link to someone else's", needsRoot: true,
      plant: { sandbox in
        let elsewhere = try directory(sandbox.path("planted"), mode: 0o700, owner: nobody)
        let data = try directory(sandbox.path("data"), mode: 0o700)
        #expect(symlink(elsewhere, data + "/sessionctl") == 0)
        return (["XDG_DATA_HOME": data], elsewhere)
      }, reason: "belongs to uid 65534"),
    Planted(
      name: "a world-writable directory of the user's own", needsRoot: false,
      plant: { sandbox in
        ([:], try directory(sandbox.home + "/.local/share/sessionctl", mode: 0o777))
      }, reason: "can be written by its group and others (mode 0777"),
    Planted(
      name: "a group-writable directory of the user's own", needsRoot: false,
      plant: { sandbox in
        ([:], try directory(sandbox.home + "/.local/share/sessionctl", mode: 0o770))
      }, reason: "can be written by its group (mode 0770"),
    Planted(
      name: "a symbolic link to a world-writable sticky directory", needsRoot: false,
      plant: { sandbox in
        let elsewhere = try directory(sandbox.path("sticky"), mode: 0o1777)
        try FileManager.default.createDirectory(
          atPath: sandbox.home + "/.local/share", withIntermediateDirectories: true)
        #expect(symlink(elsewhere, sandbox.home + "/.local/share/sessionctl") == 0)
        return ([:], elsewhere)
      }, reason: "can be written by its group and others (mode 1777"),
    Planted(
      name: "a world-writable parent, the directory not made yet", needsRoot: false,
      plant: { sandbox in
        ([:], try directory(sandbox.home + "/.local", mode: 0o777))
      }, reason: "can be written by its group and others (mode 0777"),
  ]

  /// A default directory (or one of its parents) that another user owns or may write, as
  /// someone could plant it in a root's `HOME`, is refused for writing and for reading:
  /// exit 1, naming the directory actually used (links followed), its owner or mode and
  /// what to do; nothing is created or written there, and a store planted there is not
  /// opened. An explicit `--db` or `$SESSIONCTL_DB` there is used as given.
  @Test(arguments: planted)
  func aDefaultDirectoryThatIsNotTheUsersOwnIsRefused(_ planted: Planted) async throws {
    guard !planted.needsRoot || getuid() == 0 else { return }
    let sandbox = try Sandbox()
    let (environment, made) = try planted.plant(sandbox)
    let directory = URL(fileURLWithPath: made).resolvingSymlinksInPath().path
    let write = try await sandbox.run(["login", "alice"], environment: environment)
    #expect(write.status == 1, "\(write)")
    #expect(write.stderr.contains("the directory \(directory) "), "\(write.stderr)")
    #expect(write.stderr.contains(planted.reason), "\(write.stderr)")
    #expect(write.stderr.contains("--db"), "\(write.stderr)")
    let created = try FileManager.default.subpathsOfDirectory(atPath: directory).filter {
      $0.hasPrefix("session") || $0.hasPrefix("sessionctl")
    }
    #expect(created.isEmpty, "\(created)")

    // A store planted where the default location leads: an explicit path to it is used as
    // given, the default location refuses to open it.
    let file =
      environment["XDG_DATA_HOME"].map { $0 + "/sessionctl/session.db" } ?? sandbox.defaultDatabase
    try FileManager.default.createDirectory(
      atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path, withIntermediateDirectories: true)
    let explicit = try await sandbox.run(db: file, ["login", "mallory"])
    #expect(explicit.status == 0, "an explicit --db is used as given: \(explicit)")
    let variable = try await sandbox.run(["status"], environment: ["SESSIONCTL_DB": file])
    #expect(variable.status == 0, "$SESSIONCTL_DB is used as given: \(variable)")
    let files = ["", "-wal", "-shm", "-journal"].map { file + $0 }
    let before = files.map(sandbox.contents)
    for read in [["status"], ["history"], ["check"]] {
      let outcome = try await sandbox.run(read, environment: environment)
      #expect(outcome.status == 1, "\(read): \(outcome)")
      #expect(outcome.stderr.contains("the directory \(directory) "), "\(read): \(outcome.stderr)")
    }
    #expect(files.map(sandbox.contents) == before, "the planted store and its files are as they were")
  }

  /// A path shaped like a URL is a file when its "scheme" is a directory that exists
  /// (`data://s.db` is `s.db` in `data:`), and refused as a URL, creating nothing, when it
  /// is not.
  @Test func aPathShapedLikeAURLIsAFileWhenItsDirectoryExists() async throws {
    let sandbox = try Sandbox()
    let work = sandbox.path("work")
    try FileManager.default.createDirectory(atPath: work + "/data:", withIntermediateDirectories: true)
    let login = try await sandbox.runProgram(
      "/bin/sh", ["-c", #"cd "$0" && exec "$1" --db data://s.db login alice"#, work, Sandbox.sessionctl],
      environment: sandbox.environment)
    #expect(login.status == 0, "\(login.stderr)")
    #expect(sandbox.exists(work + "/data:/s.db"))
    let refused = try await sandbox.runProgram(
      "/bin/sh", ["-c", #"cd "$0" && exec "$1" --db other://s.db login alice"#, work, Sandbox.sessionctl],
      environment: sandbox.environment)
    #expect(refused.status != 0)
    #expect(refused.stderr.contains("other:// URL, not a file"), "\(refused.stderr)")
    #expect(!sandbox.exists(work + "/other:"))
  }
}

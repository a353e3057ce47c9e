import Foundation
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
}

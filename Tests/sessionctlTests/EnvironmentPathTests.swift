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

  /// Runs `sessionctl` with `arguments` and the variable `name` set to `value`, in which
  /// `%FF` stands for the byte 0xFF (Python hands the environment over as bytes; Foundation's
  /// Process cannot).
  func run(_ sandbox: Sandbox, _ name: String, _ value: String, _ arguments: [String]) async throws -> Outcome
  {
    let script = """
      import os, subprocess, sys
      exe, name, value, *args = sys.argv[1:]
      env = dict(os.environb)
      env[name.encode()] = value.encode().replace(b"%FF", b"\\xff")
      sys.exit(subprocess.call([exe] + args, env=env))
      """
    return try await sandbox.runProgram(
      "/usr/bin/env", ["python3", "-c", script, Sandbox.sessionctl, name, value] + arguments,
      environment: sandbox.environment)
  }

  /// The names in `directory`, as bytes (a name that is not UTF-8 included).
  func names(_ sandbox: Sandbox, _ directory: String) async throws -> String {
    let listing = try await sandbox.runProgram(
      "/usr/bin/env",
      ["python3", "-c", "import os, sys; print(sorted(os.listdir(sys.argv[1].encode())))", directory],
      environment: sandbox.environment)
    return listing.stdout
  }

  /// A variable a rule reads whose bytes are not UTF-8 is refused as such bytes in an
  /// argument are (exit 65, the variable named), for reading and writing, and nothing is
  /// created: used repaired (U+FFFD), it would name another file.
  @Test func aVariableThatIsNotUTF8IsRefusedNamed() async throws {
    let sandbox = try Sandbox()
    let good = sandbox.path("store.db")
    _ = try await sandbox.run(db: good, ["login", "alice"])
    let moved = try await sandbox.runProgram(
      "/usr/bin/env",
      [
        "python3", "-c",
        "import os, sys; os.rename(sys.argv[1], sys.argv[2].encode().replace(b'%FF', b'\\xff'))",
        good, sandbox.path("s%FF.db"),
      ],
      environment: sandbox.environment)
    #expect(moved.status == 0, "\(moved)")
    let before = try await names(sandbox, sandbox.root)
    let cases: [(String, String)] = [
      ("SESSIONCTL_DB", sandbox.path("s%FF.db")), ("HOME", sandbox.path("h%FF")),
      ("XDG_DATA_HOME", sandbox.path("x%FF")),
    ]
    for (name, value) in cases {
      for command in [["status"], ["login", "bob"], ["watch", "--limit", "1"]] {
        let outcome = try await run(sandbox, name, value, command)
        #expect(outcome.status == 65, "\(name) \(command): \(outcome)")
        #expect(
          outcome.stderr.contains("the environment variable \(name) is not valid UTF-8"),
          "\(name): \(outcome)")
        #expect(outcome.stdout.isEmpty)
      }
    }
    #expect(try await names(sandbox, sandbox.root) == before)
    #expect(!sandbox.exists(sandbox.defaultDatabase))
    // A variable no rule reads is not looked at: --db names the file, SESSIONCTL_DB the default.
    let named = try await run(
      sandbox, "SESSIONCTL_DB", sandbox.path("s%FF.db"), ["--db", sandbox.path("n.db"), "login", "carol"])
    #expect(named.status == 0, "\(named)")
    let environment = try await run(
      sandbox, "HOME", sandbox.path("h%FF"), ["--db", sandbox.path("n.db"), "status"])
    #expect(environment.status == 0, "\(environment)")
  }
}

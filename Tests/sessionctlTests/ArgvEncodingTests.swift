import Foundation
import TestSupport
import Testing

@testable import sessionctl

@Suite(.timeLimit(.minutes(10))) struct ArgvEncodingTests {
  @Test func invalidUTF8IsRefusedNotRepaired() throws {
    #expect(throws: CLIError.invalidInput("argument 2 is not valid UTF-8")) {
      try SessionCtl.decode([Array("login".utf8), [0x61, 0x62, 0xFF]])
    }
    #expect(try SessionCtl.decode([Array("login".utf8), Array("José".utf8)]) == ["login", "José"])
  }

  @Test func theBinaryRefusesInvalidUTF8AndWritesNothing() async throws {
    let sandbox = try Sandbox()
    let database = sandbox.path("session.db")
    _ = try await sandbox.run(db: database, ["login", "alice"])
    // Python passes argv as raw bytes; Foundation's Process cannot.
    let script =
      "import subprocess, sys; sys.exit(subprocess.call([sys.argv[1], '--db', sys.argv[2], 'rename', b'ab\\xff']))"
    let outcome = try await sandbox.runProgram(
      "/usr/bin/env", ["python3", "-c", script, Sandbox.sessionctl, database],
      environment: sandbox.environment)
    #expect(outcome.status == 65)
    #expect(outcome.stderr.contains("argument 4 is not valid UTF-8"))
    #expect(try await sandbox.sqlite(database, "SELECT username FROM session") == "alice")
  }
}

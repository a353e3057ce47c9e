import Foundation
import Testing

/// `sessionctl check` finds a session row no change explains, after `compact --keep 0` too.
@Suite(.serialized, .timeLimit(.minutes(10))) struct UnexplainedStateCommandTests {
  @Test func checkFindsABlobWriteAfterEveryChangeWasCompacted() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let compact = try await sandbox.run(db: db, ["compact", "--keep", "0"])
    #expect(compact.status == 0, "\(compact)")
    #expect(try await sandbox.run(db: db, ["check"]).status == 0)
    // Incremental blob I/O writes no indexed column, so the unique username is out of its
    // reach; the account's time is not.
    let script = """
      import sqlite3, sys
      con = sqlite3.connect(sys.argv[1])
      with con.blobopen('accounts', 'updated_at', 1) as blob:
          blob.write(b'1999')
      con.commit()
      """
    let python = try await sandbox.runProgram(
      "/usr/bin/python3", ["-c", script, db], environment: sandbox.environment)
    #expect(python.status == 0, "\(python)")
    let check = try await sandbox.run(db: db, ["check"])
    #expect(check.status == 1, "\(check)")
    #expect(
      check.lines.contains {
        $0.hasPrefix("FAIL  state ") && $0.contains("bypassed the triggers")
      },
      "\(check)")
    #expect(check.stderr == "sessionctl: error: check found 1 problem in \(db)\n")
  }
}

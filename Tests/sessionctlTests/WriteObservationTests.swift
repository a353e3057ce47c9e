import Foundation
import SystemKit
import TestSupport
import Testing

/// A write's answer is one atomic observation: the "no change" line of `login`, `logout`
/// and `rename` carries the state and cursor the write itself found, never a second read
/// taken after it. Another writer commits all the time (it turns the login state over and
/// over, thousands of times a second); every "no change" must then show a state in which
/// the write really changes nothing (`login alice`: alice, signed in; `logout`: signed
/// out). A state read after the write, in a separate read, is often already the other
/// writer's next one.
@Suite(.timeLimit(.minutes(10))) struct WriteObservationTests {

  @Test func aNoChangeAnswerOnAFileShowsTheStateTheWriteSaw() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("session.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    // A feed that stays small keeps the file's size: what this test checks is not how a
    // growing file is opened during a checkpoint.
    #expect(try await sandbox.run(db: db, ["retention", "--keep", "16"]).status == 0)
    let stop = sandbox.path("io/stop")
    let writer = try await ChildProcess(
      "/usr/bin/python3", ["-c", Self.flipper, db, stop], environment: ["PATH": "/usr/bin:/bin"],
      stdout: .pipe, stderr: .file(sandbox.path("io/flipper")))
    try await withCleanup {
      #expect(try await writer.readLine(timeout: .seconds(120)) == "flipping")
      // The window a second read leaves on a file is short (tens of microseconds): more rounds.
      try await expectConsistentAnswers(sandbox, db, rounds: 100)
    } cleanup: {
      _ = FileManager.default.createFile(atPath: stop, contents: nil)
      if (try? await writer.wait(timeout: .seconds(60))) == nil {
        writer.kill(SIGKILL)
        await writer.wait()
      }
    }
  }

  @Test func aNoChangeAnswerOnPostgreSQLShowsTheStateTheWriteSaw() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    let schema = try #require(url.components(separatedBy: "schema=").last)
    try await server.psql("CREATE TABLE stop_flipping ()", schema: schema)
    // A server-side loop: each UPDATE is its own transaction, committed at once.
    let flipper = Task {
      try await server.psql(
        """
        DO $$ BEGIN
          WHILE NOT EXISTS (SELECT FROM stop_flipping) AND clock_timestamp() < now() + interval '300 seconds' LOOP
            UPDATE session SET is_logged_in = NOT is_logged_in WHERE id = 1;
            COMMIT;
            PERFORM pg_sleep(0.0002);
          END LOOP;
        END $$;
        """, schema: schema)
    }
    try await withCleanup {
      #expect(
        await eventually {
          (try? await server.psql("SELECT head > 3 FROM session", schema: schema)) == "t\n"
        },
        "the other writer writes")
      try await expectConsistentAnswers(sandbox, url, rounds: 40)
    } cleanup: {
      _ = try? await server.psql("INSERT INTO stop_flipping DEFAULT VALUES", schema: schema)
      _ = try? await flipper.value
    }
  }

  /// Runs `login alice` and `logout` with `--json` `rounds` times each and checks every
  /// "no change" answer against the write that gave it.
  private func expectConsistentAnswers(_ sandbox: Sandbox, _ database: String, rounds: Int) async throws {
    var unchanged = 0
    for _ in 0..<rounds {
      for command in [["login", "alice"], ["logout"]] {
        let outcome = try await sandbox.run(db: database, ["--json"] + command)
        try #require(outcome.status == 0, "\(command): \(outcome)")
        let line = try #require(outcome.jsonLines.first, "\(command): \(outcome)")
        guard line["type"] as? String == "noChange" else { continue }
        unchanged += 1
        let state = try #require(line["state"] as? [String: Any], "\(outcome)")
        let username = state["username"] as? String
        let isLoggedIn = state["isLoggedIn"] as? Bool
        if command[0] == "login" {
          #expect(
            username == "alice" && isLoggedIn == true, "login alice changed nothing in: \(outcome.stdout)")
        } else {
          #expect(isLoggedIn == false, "logout changed nothing in: \(outcome.stdout)")
        }
      }
    }
    #expect(unchanged >= rounds / 4, "enough writes changed nothing to check their answers")
  }

  /// Python's sqlite3 module turning the login state over and over, each flip its own
  /// transaction, until the file `argv[2]` exists (or for at most 300 s, or until its parent
  /// is gone); prints `flipping` once it started.
  static let flipper = """
    import os, sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    db.execute("PRAGMA synchronous = OFF")
    parent, end, count = os.getppid(), time.monotonic() + 300, 0
    while time.monotonic() < end and os.getppid() == parent:
        db.execute("UPDATE session SET is_logged_in = 1 - is_logged_in WHERE id = 1")
        count += 1
        if count == 1:
            print("flipping", flush=True)
        if count % 64 == 0 and os.path.exists(sys.argv[2]):
            break
        time.sleep(0.00005)
    """
}

import Foundation
import TestSupport
import Testing

/// `sessionctl` on a PostgreSQL URL: the same commands, output and exit statuses as on a
/// file, over TCP, against the suite's throwaway server (`PostgresCluster`).
@Suite(.timeLimit(.minutes(10))) struct PostgresCommandTests {
  /// The schema named by a store URL's `schema=` parameter.
  func schema(of url: String) throws -> String {
    try #require(url.components(separatedBy: "schema=").last)
  }

  @Test func everyCommandWorksOnAURLAndTheFileOnlyOnesSayWhatToUseInstead() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let sandbox = try Sandbox()

    // Reading commands create nothing: the schema is missing until the first write.
    let missing = try await sandbox.run(db: url, ["status"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("holds no session store"), "\(missing)")
    #expect(
      try await server.psql("SELECT count(*) FROM pg_namespace WHERE nspname = '\(schema(of: url))'") == "0\n"
    )

    let login = try await sandbox.run(db: url, ["login", "alice"])
    #expect(login.status == 0, "\(login)")
    #expect(login.stdout.hasPrefix("1  "))
    #expect(login.stdout.contains("sessionctl  add alice, login alice, activate alice"))

    // $SESSIONCTL_DB takes a URL too; JSON is the same object as for a file.
    let status = try await sandbox.run(["--json", "status"], environment: ["SESSIONCTL_DB": url])
    #expect(status.status == 0, "\(status)")
    let object = try #require(status.jsonLines.first)
    #expect(object["cursor"] as? Int == 1)
    #expect(object["username"] as? String == "alice")
    #expect(object["isLoggedIn"] as? Bool == true)
    let text = try await sandbox.run(db: url, ["status"])
    #expect(text.stdout.contains("greeting   Hello, alice\n"))
    #expect(text.stdout.contains("database   \(url)\n"))

    #expect(try await sandbox.run(db: url, ["rename", "bob"]).status == 0)
    #expect(try await sandbox.run(db: url, ["logout"]).status == 0)
    let again = try await sandbox.run(db: url, ["logout"])
    #expect(again.status == 0)
    #expect(again.stdout.hasPrefix("no change: bob is not logged in"), "\(again)")

    let history = try await sandbox.run(db: url, ["--json", "history"])
    #expect(history.jsonLines.map { $0["cursor"] as? Int } == [1, 2, 3])
    #expect(history.jsonLines.allSatisfy { $0["origin"] as? String == "sessionctl" })

    let check = try await sandbox.run(db: url, ["check"])
    #expect(check.status == 0, "\(check)")
    #expect(check.lines.allSatisfy { $0.hasPrefix("ok ") }, "\(check)")
    #expect(try await sandbox.run(db: url, ["migrate"]).stdout == "\(url) is up to date\n")

    let compact = try await sandbox.run(db: url, ["--json", "compact", "--keep", "1"])
    #expect(compact.status == 0, "\(compact)")
    #expect(compact.jsonLines.first?["removed"] as? Int == 2)
    #expect(compact.jsonLines.first?["oldest"] as? Int == 3)
    let compacted = try await sandbox.run(db: url, ["history", "--since", "1"])
    #expect(compacted.status == 66, "\(compacted)")

    for (arguments, advice) in [
      (["backup", sandbox.path("b.db")], "pg_dump"), (["restore", sandbox.path("b.db")], "pg_restore"),
      (["retention"], "compact"),
    ] {
      let refused = try await sandbox.run(db: url, arguments)
      #expect(refused.status == 1, "\(arguments): \(refused)")
      #expect(refused.stderr.contains("works on a SQLite file"), "\(refused)")
      #expect(refused.stderr.contains(advice), "\(refused)")
      #expect(!sandbox.exists(sandbox.path("b.db")))
    }
  }

  /// A feed trigger switched to replica mode keeps its name: `check` finds it, and writes
  /// are refused instead of going unrecorded.
  @Test func checkFindsATriggerThatNoLongerFiresAndWritesAreRefused() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    _ = try await server.psql(
      "ALTER TABLE session_writer ENABLE REPLICA TRIGGER session_feed", schema: schema(of: url))
    let check = try await sandbox.run(db: url, ["check"])
    #expect(check.status == 1, "\(check)")
    #expect(
      check.lines.contains {
        $0.hasPrefix("FAIL") && $0.contains("session_feed on session_writer fires only for replication")
      },
      "\(check)")
    let login = try await sandbox.run(db: url, ["logout"])
    #expect(login.status == 1, "\(login)")
    #expect(login.stderr.contains("was changed by hand"), "\(login)")
    #expect(
      try await server.psql("SELECT is_logged_in, head FROM session", schema: schema(of: url)) == "t|1\n")
  }

  @Test func migrateCreatesTheSchemaAndSaysSo() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let sandbox = try Sandbox()
    let migrate = try await sandbox.run(db: url, ["--json", "migrate"])
    #expect(migrate.status == 0, "\(migrate)")
    let object = try #require(migrate.jsonLines.first)
    #expect(object["created"] as? Bool == true)
    #expect((object["applied"] as? [[String: Any]])?.first?["version"] as? Int == 1)
    #expect(
      try await sandbox.run(db: url, ["--json", "migrate"]).jsonLines.first?["created"] as? Bool == false)
  }

  /// One `watch` process receives a login of another `sessionctl` and an `UPDATE` typed in
  /// `psql`, all over TCP.
  @Test func watchReceivesAnotherSessionctlsLoginAndAPsqlUpdate() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    #expect(url.contains("@127.0.0.1:"))
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(db: url, ["migrate"]).status == 0)
    let (watch, stderr) = try await sandbox.start(["--db", url, "--json", "watch", "--limit", "2"])
    let snapshot = try #require(try await watch.readLine())
    #expect(snapshot.contains(#""type":"snapshot","cursor":0"#), "\(snapshot)")

    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    let login = try #require(try await watch.readLine())
    #expect(login.contains(#""cursor":1"#) && login.contains(#""origin":"sessionctl""#), "\(login)")

    _ = try await server.psql("UPDATE session SET username = 'mark'", schema: schema(of: url))
    let update = try #require(try await watch.readLine())
    #expect(update.contains(#""cursor":2"#) && update.contains(#""origin":"external""#), "\(update)")
    #expect(update.contains(#""to":"mark""#), "\(update)")

    #expect(try await watch.readLine() == nil)
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
    // Notifications worked: no warning about polling.
    #expect(sandbox.contents(stderr) == Data())
  }

  /// A server that asks for passwords: they come from libpq's usual places (`PGPASSWORD`,
  /// `PGPASSFILE`, `~/.pgpass`, the URL) and never appear in output or errors.
  @Test func passwordsComeFromLibpqsPlacesAndAreNeverPrinted() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      let secret = "pw-s3cret-\(UInt32.random(in: 0...UInt32.max))"
      _ = try await cluster.psql(
        "CREATE ROLE clerk LOGIN PASSWORD '\(secret)'; GRANT CREATE ON DATABASE postgres TO clerk")
      try await cluster.requirePassword(for: "clerk")
      let port = try #require(URL(string: cluster.url)?.port)
      let url = "postgresql://clerk@127.0.0.1:\(port)/postgres?schema=front_desk"
      let sandbox = try Sandbox()
      var outcomes: [Outcome] = []

      let refused = try await sandbox.run(db: url, ["login", "alice"])
      outcomes.append(refused)
      #expect(refused.status == 77, "\(refused)")
      #expect(refused.stderr.contains("password"), "\(refused)")

      let fromEnvironment = try await sandbox.run(
        ["--db", url, "login", "alice"], environment: ["PGPASSWORD": secret])
      outcomes.append(fromEnvironment)
      #expect(fromEnvironment.status == 0, "\(fromEnvironment)")

      let passfile = sandbox.path("pgpass")
      try "127.0.0.1:\(port):postgres:clerk:\(secret)\n".write(
        toFile: passfile, atomically: true, encoding: .utf8)
      chmod(passfile, 0o600)  // libpq ignores a password file others may read
      let fromPassfile = try await sandbox.run(
        ["--db", url, "rename", "bob"], environment: ["PGPASSFILE": passfile])
      outcomes.append(fromPassfile)
      #expect(fromPassfile.status == 0, "\(fromPassfile)")

      try FileManager.default.copyItem(atPath: passfile, toPath: sandbox.home + "/.pgpass")
      let fromHome = try await sandbox.run(db: url, ["--json", "status"])
      outcomes.append(fromHome)
      #expect(fromHome.jsonLines.first?["username"] as? String == "bob", "\(fromHome)")

      let inURL = "postgresql://clerk:\(secret)@127.0.0.1:\(port)/postgres?schema=front_desk"
      let fromURL = try await sandbox.run(
        ["--db", inURL, "status"], environment: ["HOME": sandbox.path("io")])
      outcomes.append(fromURL)
      #expect(fromURL.status == 0, "\(fromURL)")
      #expect(fromURL.stdout.contains("postgresql://clerk:***@127.0.0.1:"), "\(fromURL)")

      let wrong = try await sandbox.run(
        [
          "--db", "postgresql://clerk:wrong-\(secret)@127.0.0.1:\(port)/postgres?schema=front_desk", "status",
        ],
        environment: ["HOME": sandbox.path("io")])
      outcomes.append(wrong)
      #expect(wrong.status == 77, "\(wrong)")
      #expect(wrong.stderr.contains("postgresql://clerk:***@127.0.0.1:"), "\(wrong)")

      for outcome in outcomes {
        #expect(!outcome.stdout.contains(secret) && !outcome.stderr.contains(secret), "\(outcome)")
      }
    }
  }

  /// What waiting cannot cure is not "unreachable": a missing database or role, a role that
  /// may not log in and SSL required of a server without it exit 77 (`refused`), a bad
  /// `sslmode` 65; only a server that cannot be reached is 69.
  @Test func permanentRefusalsHaveTheirOwnStatus() async throws {
    let server = try await PostgresCluster.shared()
    let sandbox = try Sandbox()
    let tag = String(UInt32.random(in: 0...UInt32.max))
    _ = try await server.psql("CREATE ROLE nologin_\(tag) NOLOGIN")
    try await withCleanup {
      let base = try #require(URLComponents(string: server.url))
      let port = try #require(base.port)
      let cases: [(url: String, status: Int32, says: String)] = [
        ("postgresql://postgres@127.0.0.1:\(port)/nodb_\(tag)?schema=s", 77, "does not exist"),
        ("postgresql://ghost_\(tag)@127.0.0.1:\(port)/postgres?schema=s", 77, "does not exist"),
        ("postgresql://nologin_\(tag)@127.0.0.1:\(port)/postgres?schema=s", 77, "not permitted to log in"),
        ("postgresql://postgres@127.0.0.1:\(port)/postgres?schema=s&sslmode=require", 77, "SSL"),
        ("postgresql://postgres@127.0.0.1:\(port)/postgres?schema=s&sslmode=bogus", 65, "sslmode"),
        ("postgresql://postgres@127.0.0.1:1/postgres?schema=s", 69, "cannot connect"),
      ]
      for (url, status, says) in cases {
        for arguments in [["status"], ["login", "alice"]] {
          let outcome = try await sandbox.run(db: url, arguments)
          #expect(outcome.status == status, "\(url) \(arguments): \(outcome)")
          #expect(outcome.stderr.contains(says), "\(url): \(outcome)")
          #expect(outcome.stderr.split(separator: "\n").count == 1, "one line: \(outcome)")
        }
      }
    } cleanup: {
      _ = try? await server.psql("DROP ROLE IF EXISTS nologin_\(tag)")
    }
  }

  /// A running `watch` whose role loses LOGIN, its connections ended: it does not wait for
  /// ever for a server that will keep refusing, it exits 77 saying why.
  @Test func aWatchWhoseRoleLosesLoginExitsWithTheRefusal() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    let role = "watcher_\(UInt32.random(in: 0...UInt32.max))"
    _ = try await server.psql("CREATE ROLE \(role) LOGIN SUPERUSER")
    try await withCleanup {
      let (watch, stderr) = try await sandbox.start(["--db", url + "&user=\(role)", "watch"])
      let snapshot = try #require(try await watch.readLine())
      #expect(snapshot.contains("alice"), "\(snapshot)")
      _ = try await server.psql(
        "ALTER ROLE \(role) NOLOGIN; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'"
      )
      #expect(try await watch.readLine() == nil)
      #expect(try await watch.wait(timeout: .seconds(30)) == 77)
      let said = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
      #expect(said.contains("not permitted to log in"), "\(said)")
    } cleanup: {
      _ = try? await server.psql("DROP ROLE IF EXISTS \(role)")
    }
  }

  /// A password in `--db` is visible to every local user: `watch`, which runs for long,
  /// warns. A `watch
  /// --exec` hook gets no password: no `PGPASSWORD`, and `SESSIONCTL_DB` without its password.
  /// Output and errors never show it, also with a raw `?` in it.
  @Test func passwordsAreWarnedAboutAndKeptFromHooks() async throws {
    let server = try await PostgresCluster.shared()
    let secret = "Tr0ub?dor-\(UInt32.random(in: 0...UInt32.max))"
    // The server trusts 127.0.0.1: the password is carried, never asked for.
    let url = server.freshStoreURL().replacingOccurrences(of: "postgres@", with: "postgres:\(secret)@")
    let sandbox = try Sandbox()
    let missing = try await sandbox.run(db: url, ["status"])
    #expect(missing.stderr.contains("holds no session store"), "\(missing)")
    let login = try await sandbox.run(db: url, ["login", "alice"])
    #expect(login.status == 0, "\(login)")
    let watched = try await sandbox.run(db: url, ["watch", "--limit", "0"])
    #expect(watched.status == 0, "\(watched)")
    #expect(watched.stderr.contains("warning: the password in --db can be read by every user"), "\(watched)")
    let status = try await sandbox.run(db: url, ["status"])
    #expect(status.stdout.contains("postgres:***@127.0.0.1"), "\(status)")

    let fromEnvironment = try await sandbox.run(["status"], environment: ["SESSIONCTL_DB": url])
    #expect(fromEnvironment.status == 0 && fromEnvironment.stderr.isEmpty, "no warning: \(fromEnvironment)")

    sandbox.environment["SESSIONCTL_DB"] = url
    sandbox.environment["PGPASSWORD"] = secret
    let (watch, stderr) = try await sandbox.start([
      "--json", "watch", "--limit", "1", "--exec", "--", "/usr/bin/env",
    ])
    #expect(try await watch.readLine()?.contains("alice") == true, "the snapshot")
    #expect(try await sandbox.run(["logout"]).status == 0)
    #expect(try await watch.readLine()?.contains("loggedOut") == true)
    #expect(try await watch.wait(timeout: .seconds(30)) == 0)
    let hook = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    let stripped = url.replacingOccurrences(of: ":\(secret)@", with: "@")
    #expect(hook.contains("SESSIONCTL_DB=\(stripped)\n"), "\(hook)")
    #expect(!hook.contains("PGPASSWORD"), "\(hook)")
    for outcome in [missing, login, watched, status, fromEnvironment] {
      #expect(!outcome.stdout.contains("Tr0ub") && !outcome.stderr.contains("Tr0ub"), "\(outcome)")
    }
    #expect(!hook.contains("Tr0ub"), "\(hook)")
  }

  @Test func anUnreachableServerHasItsOwnStatusAndThePasswordIsNeverPrinted() async throws {
    let sandbox = try Sandbox()
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let url = "postgresql://app:s3cret-pw@127.0.0.1:1/postgres?schema=front_desk"
    for arguments in [["status"], ["login", "alice"], ["watch"], ["check"], ["--json", "history"]] {
      let outcome = try await sandbox.run(db: url, arguments)
      #expect(outcome.status == 69, "\(arguments): \(outcome)")
      #expect(outcome.stdout == "")
      #expect(outcome.stderr.hasPrefix("sessionctl: error: postgresql://app:***@127.0.0.1:1/"), "\(outcome)")
      #expect(outcome.stderr.contains("cannot connect"), "\(outcome)")
      #expect(!outcome.stderr.contains("s3cret"), "\(outcome)")
      #expect(outcome.stderr.split(separator: "\n").count == 1, "one line: \(outcome)")
    }
  }
}

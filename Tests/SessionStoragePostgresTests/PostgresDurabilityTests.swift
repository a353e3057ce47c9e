import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import TestSupport
import Testing

/// A write is reported done only once it is durable, and its outcome is never misreported:
/// whatever the server's, database's or role's defaults (`synchronous_commit = off`,
/// `statement_timeout`, `serializable`), with a synchronous standby away, with the
/// connection lost while COMMIT runs on the server, after an immediate shutdown, and in a
/// deadlock with a `psql` transaction.
@Suite(.timeLimit(.minutes(10))) struct PostgresDurabilityTests {
  /// A synchronous standby that is not connected holds every COMMIT. The store's role
  /// defaults to `synchronous_commit = off` and a 1 s `statement_timeout` (which would cancel
  /// the wait and report the commit done without the standby): the write waits all the same.
  /// Its connection is then cut while COMMIT is still waiting on the server: the store waits
  /// for the old transaction to let go of the row before it decides (the change did commit,
  /// once the standby requirement is lifted), and, when the lock timeout passes first, says
  /// the outcome is unknown, never that nothing was written.
  @Test func aCommitWaitingForAStandbyIsDoneOnlyOnceItEndsAndItsOutcomeIsNeverGuessed() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      let role = uniqueName("hasty")
      try await cluster.query(
        """
        CREATE ROLE \(role) LOGIN SUPERUSER;
        ALTER ROLE \(role) SET synchronous_commit = off;
        ALTER ROLE \(role) SET statement_timeout = '1s';
        """)
      let url = cluster.freshStoreURL() + "&user=\(role)"
      let origin = uniqueName("sync")
      let patient = try SessionStore(
        postgresURL: url, options: .init(origin: origin, lockTimeout: .seconds(90)))
      let first = try #require(try await patient.logIn(as: "alice"))
      let standby = Standby(cluster: cluster)

      // The write waits for the standby, past the statement timeout.
      try await standby.require()
      let write = Outcome { try patient.blocking.rename(to: "bob") }
      let waiting = try #require(
        try await waitingBackend(of: "\(origin)/writer", on: cluster, for: "SyncRep"))
      try await Task.sleep(for: .seconds(2))
      #expect(!write.isDone, "a write is not done before the standby has it")

      // Lost while committing: the store waits for the old transaction, then finds it committed.
      try #require(shutDownTCPConnections(localPort: waiting.port) == 1, "the connection is cut")
      #expect(
        await eventually {
          (try? await cluster.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(origin)/writer' "
              + "AND wait_event_type = 'Lock'")) == "1\n"
        }, "the outcome check waits for the old transaction's row lock")
      try await standby.release()
      let renamed = try #require(try await write.value(), "the change committed, and the store says so")
      #expect(renamed.cursor == first.cursor.next)
      #expect(try patient.history() == [first, renamed])

      // Lost while committing, and the row held past the lock timeout: unknown.
      let hasty = try SessionStore(
        postgresURL: url, options: .init(origin: origin + "_h", lockTimeout: .milliseconds(500)))
      try await standby.require()
      let cut = Outcome { try hasty.blocking.rename(to: "carol") }
      let held = try #require(try await waitingBackend(of: "\(origin)_h/writer", on: cluster, for: "SyncRep"))
      try #require(shutDownTCPConnections(localPort: held.port) == 1, "the connection is cut")
      let error = await #expect(throws: SessionStorageError.self) { try await cut.value() }
      #expect(error?.code == .unavailable)
      #expect(error?.message.contains("unknown") == true, "\(String(describing: error))")
      #expect(error?.message.contains("not committed") == false, "\(String(describing: error))")
      #expect(error?.message.contains("nothing was written") == false, "\(String(describing: error))")
      try await standby.release()
      #expect(
        await eventually { (try? patient.state.username) == "carol" },
        "it commits once the standby is no longer needed")
    }
  }

  /// The cluster's default is `synchronous_commit = off`, and its WAL writer waits 10 s
  /// between flushes: an immediate shutdown (a crash of the server) right after the writes
  /// loses none that was reported done.
  @Test func anImmediateShutdownLosesNoWriteReportedDone() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      #expect(try await cluster.query("SHOW synchronous_commit") == "off\n")
      try await cluster.query("ALTER SYSTEM SET wal_writer_delay = '10s'; SELECT pg_reload_conf()")
      let url = cluster.freshStoreURL()
      // It must connect, however loaded the machine: a generous connect timeout.
      let store = try SessionStore(
        postgresURL: url, options: .init(origin: "crash", connectTimeout: .seconds(60)))
      var acknowledged = [try #require(try await store.logIn(as: "start"))]
      for index in 0..<20 {
        acknowledged.append(try #require(try await store.rename(to: "w\(index)")))
      }
      try await cluster.restart(immediate: true)
      let after = try SessionStore(postgresURL: url, options: .init(origin: "after", readOnly: true))
      #expect(try after.history(from: .beginning, limit: 100) == acknowledged)
    }
  }

  /// A role whose default isolation is `serializable`: writers that wait for the session row
  /// go on with the newest head (the store's sessions are `read committed`) instead of
  /// failing to serialize.
  @Test func aSerializableDefaultFailsNoWriterThatWaitsForTheRow() async throws {
    let cluster = try await PostgresCluster.shared()
    let role = uniqueName("strict")
    try await cluster.query(
      "CREATE ROLE \(role) LOGIN SUPERUSER; ALTER ROLE \(role) SET default_transaction_isolation = 'serializable'"
    )
    try await withCleanup {
      let url = cluster.freshStoreURL()
      let owner = try SessionStore(postgresURL: url, options: .init(origin: "owner"))  // creates it
      try await owner.logIn(as: "start")
      let stores = try (0..<6).map {
        try SessionStore(postgresURL: url + "&user=\(role)", options: .init(origin: "strict\($0)"))
      }
      let failures = try await withThrowingTaskGroup(of: [SessionStorageError].self) { group in
        for (index, store) in stores.enumerated() {
          group.addTask {
            var failed: [SessionStorageError] = []
            for write in 0..<15 {
              do {
                try await store.rename(to: "s\(index)-\(write)")
              } catch let error as SessionStorageError {
                failed.append(error)
              }
            }
            return failed
          }
        }
        return try await group.reduce(into: []) { $0 += $1 }
      }
      #expect(failures.isEmpty, "\(failures.prefix(3))")
      let history = try owner.history(from: .beginning, limit: 1000)
      #expect(history.map(\.cursor.value) == Array(1...Int64(1 + 6 * 15)))
    } cleanup: {
      _ = try? await cluster.query("DROP ROLE IF EXISTS \(role)")
    }
  }

  /// A `psql` transaction that locks the feed and then waits for the session row deadlocks
  /// with a library write: the write, rolled back as the deadlock's victim, runs again and
  /// commits after it.
  @Test func aWriteRolledBackByADeadlockRunsAgain() async throws {
    let cluster = try await PostgresCluster.shared()
    let origin = uniqueName("deadlock")
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(), options: .init(origin: origin, lockTimeout: .seconds(30)))
    let first = try #require(try await store.logIn(as: "alice"))
    // psql is given longer than its server loop waits for the writer.
    async let session = cluster.psql(
      """
      SET deadlock_timeout = '20s';  -- the store's backend (1 s) finds the deadlock: its write is the victim
      BEGIN;
      LOCK TABLE session_changes IN SHARE MODE;
      DO $$ BEGIN
        WHILE NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '\(origin)/writer'
          AND wait_event_type = 'Lock') AND clock_timestamp() < now() + interval '60 seconds' LOOP
          PERFORM pg_sleep(0.01);
        END LOOP;
      END $$;
      UPDATE session SET username = 'psql';
      COMMIT;
      """, schema: store.requirePostgres().schema, timeout: .seconds(120))
    #expect(
      await eventually {
        (try? await cluster.query(
          "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = "
            + "'session_changes' AND c.relnamespace = '\(store.requirePostgres().schema)'::regnamespace AND l.mode = 'ShareLock' "
            + "AND l.granted")) == "1\n"
      }, "psql holds the feed")
    let renamed = try await store.rename(to: "bob")
    _ = try await session
    #expect(renamed?.after.username == "bob")
    let history = try store.history()
    #expect(history.map(\.cursor.value) == [1, 2, 3])
    #expect(history.first == first)
    #expect(history.map(\.origin) == [origin, "external", origin], "psql's change committed first")
  }
}

/// A backend of `application_name` `name` waiting on `event`: its process id and the
/// client's port (this process's side of the connection).
private func waitingBackend(of name: String, on cluster: PostgresCluster, for event: String) async throws
  -> (pid: Int, port: Int)?
{
  var found: (pid: Int, port: Int)?
  _ = await eventually {
    let row =
      (try? await cluster.query(
        "SELECT pid, client_port FROM pg_stat_activity WHERE application_name = '\(name)' AND wait_event = '\(event)'"
      )) ?? ""
    let fields = row.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
    guard fields.count == 2, let pid = Int(fields[0]), let port = Int(fields[1]) else { return false }
    found = (pid, port)
    return true
  }
  return found
}

/// A synchronous standby that never connects: while required, every COMMIT that asks for
/// it waits.
private struct Standby {
  let cluster: PostgresCluster

  /// Names a standby that is not there, and waits until a commit waits for it: the
  /// checkpointer takes the setting to committing backends some time after the reload.
  func require() async throws {
    try await cluster.query("ALTER SYSTEM SET synchronous_standby_names = 'ghost'; SELECT pg_reload_conf()")
    try #require(
      await eventually(timeout: .seconds(120)) { await aCommitWaits() }, "a commit waits for the standby")
  }

  /// Whether a commit waits for the standby: a probe commits in a session of its own and,
  /// once it waits, is cancelled (its commit stays local, which is all a probe needs).
  private func aCommitWaits() async -> Bool {
    let probe = uniqueName("probe")
    return await withTaskGroup(of: Bool.self) { [cluster] group in
      group.addTask {
        _ = try? await cluster.query(
          "SET application_name = '\(probe)'; SET synchronous_commit = on; "
            + "SELECT pg_logical_emit_message(true, 'probe', '');")
        return false
      }
      group.addTask {
        while !Task.isCancelled {
          let cancelled = try? await cluster.query(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '\(probe)' "
              + "AND wait_event = 'SyncRep'")
          if cancelled == "t\n" { return true }
          try? await Task.sleep(for: .milliseconds(20))
        }
        return false
      }
      var waited = false
      for await cancelledTheProbe in group {
        // The probe ended (committed without waiting, or cancelled): the watcher stops.
        if cancelledTheProbe { waited = true } else { group.cancelAll() }
      }
      return waited
    }
  }

  /// Lifts the requirement: the waiting commits complete.
  func release() async throws {
    try await cluster.query("ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf()")
  }
}

/// A blocking write on a thread of its own, so that a write that waits for minutes holds no
/// thread of the cooperative pool.
private final class Outcome: Sendable {
  private let task: Task<SessionEntry?, any Error>
  private let done: Done

  /// Set once the write returned or threw.
  private final class Done: Sendable {
    let flag = Atomic(false)
  }

  init(_ body: @escaping @Sendable () throws -> SessionEntry?) {
    let done = Done()
    self.done = done
    task = Task {
      defer { done.flag.store(true, ordering: .sequentiallyConsistent) }
      return try await onThreadOfItsOwn(body)
    }
  }

  /// Whether the write returned or threw.
  var isDone: Bool { done.flag.load(ordering: .sequentiallyConsistent) }

  /// What the write returned.
  func value() async throws -> SessionEntry? { try await task.value }
}

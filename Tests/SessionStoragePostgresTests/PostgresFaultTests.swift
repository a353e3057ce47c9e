import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import SystemKit
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Faults: backends terminated mid-stream, a server restart while writes continue, a long
/// transaction on the session row, a lost notification, and a subscriber in another process.
/// Each test checks that subscribers receive every committed change once, in order (the
/// cursors `1...head`, and each entry as `history` has it), that writers get `unavailable`
/// errors naming the store's redacted URL, and that every acknowledged write is in the feed.
///
/// Backends are found by their `application_name`, `<origin>/writer`, `/reader` or
/// `/listener`, which the store sets on its connections.
@Suite(.timeLimit(.minutes(10))) struct PostgresFaultTests {
  @Test func terminatingTheListenersBackendMidStreamLosesNothingAndRepeatsNothing() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let writer = try SessionStore(postgresURL: url, options: .init(origin: "fault-writer"))
    // The subscriber connects as a role of its own, so that its reconnection can be refused.
    let origin = uniqueName("listened")
    try await cluster.query("CREATE ROLE \(origin) LOGIN SUPERUSER")
    try await withCleanup {
      let store = try SessionStore(
        postgresURL: url + "&user=\(origin)",
        options: .init(origin: origin, readOnly: true, safetyPollInterval: .seconds(30)))
      let subscription = try store.changes(from: .now)
      let follower = Follower(subscription)
      let listening = WakeMode.notifications(pollInterval: .seconds(30))
      #expect(await eventually { subscription.wakeMode == listening })

      let writing = Writer(writer)
      var listener = try #require(try await backends(of: "\(origin)/listener", on: cluster).first)
      for round in 1...5 {
        let before = writing.count
        #expect(await eventually { writing.count > before }, "writes go on (round \(round))")
        #expect(try await terminate("\(origin)/listener", on: cluster) == 1, "round \(round)")
        #expect(
          await eventually {
            let now = (try? await backends(of: "\(origin)/listener", on: cluster)) ?? []
            guard now.count == 1, now != [listener] else { return false }
            listener = now[0]
            return true
          }, "a new LISTEN connection (round \(round))")
      }
      #expect(await eventually { subscription.wakeMode == listening })

      // While the listener cannot connect again, the subscriber polls, says so, and misses nothing.
      try await cluster.query("ALTER ROLE \(origin) NOLOGIN")
      #expect(try await terminate("\(origin)/listener", on: cluster) == 1)
      #expect(await eventually { subscription.wakeMode.isPolling })
      let whilePolling = writing.count + 2
      #expect(await eventually { writing.count >= whilePolling })
      let written = try #require(writing.acknowledged.last)
      #expect(await eventually { follower.entries.last.map { $0.cursor >= written.cursor } ?? false })
      #expect(subscription.wakeMode.isPolling, "\(subscription.wakeMode)")
      try await cluster.query("ALTER ROLE \(origin) LOGIN")
      #expect(await eventually { subscription.wakeMode == listening })

      let acknowledged = try await writing.finish()
      let received = try await follower.finish()
      try expectEveryChangeOnce(received, in: writer, acknowledged: acknowledged)
      #expect(acknowledged.count >= 5 + 2)
    } cleanup: {
      _ = try? await cluster.psql("DROP ROLE IF EXISTS \(origin)")
    }
  }

  @Test func aTerminatedWriterOrReaderReconnectsAndAWriteCutOffSaysNothingWasWritten() async throws {
    let cluster = try await PostgresCluster.shared()
    let origin = uniqueName("cut")
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(), options: .init(origin: origin, lockTimeout: .zero))
    let first = try #require(try await store.logIn(as: "alice"))

    // Idle connections the server ended are connected again by the next use.
    #expect(try await terminate("\(origin)/writer", on: cluster) == 1)
    let renamed = try #require(try await store.rename(to: "bob"))
    #expect(renamed.cursor == first.cursor.next)
    #expect(try await terminate("\(origin)/reader", on: cluster) == 1)
    #expect(try store.state.username == "bob")
    #expect(try store.history() == [first, renamed])

    // A write whose backend is ended while it waits for the row lock fails, saying so.
    let holder = try await RowHolder(of: store, on: cluster, setting: "held", then: "ROLLBACK")
    let write = Task { try await store.rename(to: "carol") }
    #expect(
      await eventually {
        (try? await cluster.query(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(origin)/writer' "
            + "AND wait_event_type = 'Lock'")) == "1\n"
      })
    #expect(try await terminate("\(origin)/writer", on: cluster) == 1)
    let error = await #expect(throws: SessionStorageError.self) { try await write.value }
    #expect(error?.code == .unavailable)
    #expect(try error?.path == store.requirePostgres().url)
    #expect(error?.message.contains("nothing was written") == true, "\(String(describing: error))")
    try await holder.release()
    #expect(try store.history() == [first, renamed], "nothing was written")
    let after = try #require(try await store.rename(to: "dave"))
    #expect(after.cursor == renamed.cursor.next)
  }

  @Test func aServerRestartWhileWritesContinueLosesNothingAcknowledgedAndTheSubscriberMissesNothing()
    async throws
  {
    try await PostgresCluster.withPrivateCluster { cluster in
      let url = cluster.freshStoreURL()
      let writer = try SessionStore(
        postgresURL: url, options: .init(origin: "restart-writer", connectTimeout: .seconds(2)))
      let store = try SessionStore(
        postgresURL: url,
        options: .init(
          origin: "restart-subscriber", readOnly: true, safetyPollInterval: .milliseconds(500),
          connectTimeout: .seconds(2)))
      let subscription = try store.changes(from: .now)
      let follower = Follower(subscription)
      #expect(await eventually { !subscription.wakeMode.isPolling && subscription.wakeMode != .inProcess })

      let writing = Writer(writer)
      #expect(
        await eventually { writing.count >= 5 }, "\(writing.count) writes, failures: \(writing.failures)")
      // Writes that run into the restart fail (or, when it fell between two writes, the next
      // one connects again before its BEGIN): whichever happens, the checks below hold.
      try await cluster.restart()
      let restarted = writing.count
      #expect(
        await eventually { writing.count >= restarted + 5 },
        "writes go on after the restart: \(writing.count - restarted) writes, failures: \(writing.failures)")
      #expect(await eventually { !subscription.wakeMode.isPolling }, "the LISTEN connection is back")

      let acknowledged = try await writing.finish()
      let received = try await follower.finish()
      try expectEveryChangeOnce(received, in: writer, acknowledged: acknowledged)
      for failure in writing.failures {
        #expect(failure.code == .unavailable, "\(failure)")
        #expect(try failure.path == writer.requirePostgres().url, "\(failure)")
      }
    }
  }

  @Test(arguments: ["COMMIT", "ROLLBACK"])
  func aLongTransactionOnTheRowMakesWritersWaitAndItsChangeIsNeverSkipped(_ end: String) async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let waiter = uniqueName("waiter")
    let writers = try (0..<3).map {
      // They wait for as long as the row is held (no lock timeout).
      try SessionStore(postgresURL: url, options: .init(origin: "\(waiter)-\($0)", lockTimeout: .zero))
    }
    let store = try SessionStore(
      postgresURL: url,
      options: .init(origin: "long-subscriber", readOnly: true, safetyPollInterval: .seconds(30)))
    let first = try #require(try await writers[0].logIn(as: "alice"))
    let subscription = try store.changes(from: .now)
    let follower = Follower(subscription)

    let holder = try await RowHolder(of: store, on: cluster, setting: "x", then: end)
    let writes = writers.enumerated().map { index, writer in
      Task { try await writer.rename(to: "after-\(index)") }
    }
    #expect(
      await eventually {
        (try? await cluster.query(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '\(waiter)-_/writer' "
            + "AND wait_event_type = 'Lock' AND query LIKE '%UPDATE ONLY session_writer SET%'")) == "3\n"
      }, "the three writers wait for the row")
    try await holder.release()
    var acknowledged = [first]
    for write in writes { acknowledged.append(try #require(try await write.value)) }
    _ = try #require(try await writers[0].rename(to: "done"))

    let received = try await follower.finish()
    let history = try writers[0].history(from: .beginning, limit: 100)
    try expectEveryChangeOnce(received, in: writers[0], acknowledged: acknowledged, from: first.cursor)
    let external = history.filter { $0.origin == "external" }
    if end == "COMMIT" {
      #expect(external.map(\.cursor) == [first.cursor.next].compactMap { $0 }, "psql's change commits first")
      #expect(received.first == external.first, "the change that committed late is not skipped")
    } else {
      #expect(external.isEmpty)
    }
    #expect(history.filter { $0.origin.hasPrefix(waiter) }.count == 1 + 3 + 1, "alice, the waiters, done")
  }

  @Test func aWriteHeldLongerThanItsLockTimeoutFailsWithBusyAndWritesNothing() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(),
      options: .init(origin: "impatient", lockTimeout: .milliseconds(300)))
    let first = try #require(try await store.logIn(as: "alice"))
    let holder = try await RowHolder(of: store, on: cluster, setting: "held", then: "ROLLBACK")
    let error = await #expect(throws: SessionStorageError.self) { try await store.rename(to: "bob") }
    #expect(error?.code == .busy, "\(String(describing: error))")
    #expect(try error?.path == store.requirePostgres().url)
    try await holder.release()
    #expect(try store.history() == [first], "nothing was written")
    #expect(try await store.rename(to: "bob")?.cursor == first.cursor.next)
  }

  /// A notification that cannot arrive: the listener's server process is stopped (SIGSTOP)
  /// while another store writes, so the notification waits in the server; only the safety
  /// poll can wake the subscriber, and it reads the change from the log.
  @Test func aNotificationThatCannotArriveIsCoveredByTheSafetyPoll() async throws {
    // A private cluster: its server processes are this machine's, to be stopped and continued.
    try await PostgresCluster.withPrivateCluster { cluster in
      let url = cluster.freshStoreURL()
      let writer = try SessionStore(postgresURL: url, options: .init(origin: "lost-writer"))
      let start = try #require(try await writer.logIn(as: "zero"))
      let store = try SessionStore(
        postgresURL: url,
        options: .init(origin: "lost", readOnly: true, safetyPollInterval: .milliseconds(200)))
      let subscription = try store.changes(from: .now)
      let follower = Follower(subscription)
      #expect(await eventually { subscription.wakeMode == .notifications(pollInterval: .milliseconds(200)) })
      let pid = try #require(try await backends(of: "lost/listener", on: cluster).first.flatMap { pid_t($0) })
      let command = try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
      #expect(command.hasPrefix("postgres"), "the listener's backend is a local server process")
      guard command.hasPrefix("postgres") else { return }
      #expect(kill(pid, SIGSTOP) == 0)
      defer { kill(pid, SIGCONT) }

      // Another store's writes: no in-process wake-up reaches this store's subscriber.
      var acknowledged: [SessionEntry] = []
      for name in ["one", "two", "three"] {
        acknowledged.append(try #require(try await writer.rename(to: name)))
        let cursor = acknowledged[acknowledged.count - 1].cursor
        #expect(
          await eventually { follower.entries.last?.cursor == cursor },
          "the poll delivered \(name)")
      }
      #expect(try processState(pid) == "T", "the listener's backend was stopped all along")
      kill(pid, SIGCONT)
      acknowledged.append(try #require(try await writer.rename(to: "done")))
      let received = try await follower.finish()
      try expectEveryChangeOnce(received, in: writer, acknowledged: acknowledged, from: start.cursor)
    }
  }

  /// A subscriber on a hot standby, where LISTEN is not available: its mode says it polls,
  /// at the safety poll's interval and why; it keeps one connection instead of reconnecting
  /// every 2 s; changes replicated from the primary reach it; and once the standby is
  /// promoted it listens.
  @Test func onAHotStandbyTheListenerKeepsOneConnectionPollsAndListensOncePromoted() async throws {
    try await PostgresCluster.withPrivateCluster { primary in
      let url = primary.freshStoreURL()
      let writer = try SessionStore(postgresURL: url, options: .init(origin: "primary"))
      try await writer.logIn(as: "alice")
      let standby = try await primary.startStandby()
      try await withCleanup {
        let schema = try writer.requirePostgres().schema
        #expect(
          await eventually {
            (try? await standby.query("SELECT username FROM session", schema: schema)) == "alice\n"
          },
          "the standby has the store")
        let follower = uniqueName("follower")
        let store = try SessionStore(
          postgresURL: standby.clientURL() + "&schema=" + schema,
          options: .init(origin: follower, readOnly: true, safetyPollInterval: .milliseconds(200)))
        let subscription = try store.changes(from: .now)
        guard case .polling(let interval, let reason) = subscription.wakeMode else {
          Issue.record("\(subscription.wakeMode)")
          return
        }
        #expect(interval == .milliseconds(200), "\(reason)")
        #expect(reason.contains("hot standby"), "\(reason)")
        let listener = try await backends(of: "\(follower)/listener", on: standby)
        #expect(listener.count == 1)

        let follow = Follower(subscription)
        let renamed = try #require(try await writer.rename(to: "bob"))
        #expect(await eventually { follow.entries.last == renamed }, "a replicated change arrives")
        try await Task.sleep(for: .seconds(3))
        #expect(
          try await backends(of: "\(follower)/listener", on: standby) == listener, "the same connection")

        try await standby.query("SELECT pg_promote()")
        #expect(
          await eventually { subscription.wakeMode == .notifications(pollInterval: .milliseconds(200)) })
        #expect(
          try await backends(of: "\(follower)/listener", on: standby) == listener, "the same connection")
        let promoted = try SessionStore(
          postgresURL: standby.clientURL() + "&schema=" + schema, options: .init(origin: "promoted"))
        try await promoted.rename(to: "done")
        let received = try await follow.finish()
        #expect(received.map(\.after.username) == ["bob", "done"])
      } cleanup: {
        await standby.stop()
      }
    }
  }

  @Test func aSubscriberInAnotherProcessOverTCPReceivesEveryWriteOnceInOrder() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()  // over TCP: postgresql://postgres@127.0.0.1:PORT/…
    let writer = try SessionStore(postgresURL: url, options: .init(origin: "tcp-writer"))
    let scratch = try TemporaryDirectory()
    let child = try await ChildProcess(
      ProcessRunner.product("sessiontorture"), ["subscribe", "--db", url, "--count", "20"],
      environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe, stderr: .file(scratch.file("stderr")))
    #expect(try await child.readLine(timeout: .seconds(30)) == "ready")
    #expect(
      await eventually {
        (try? await cluster.query(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('sessiontorture/reader', "
            + "'sessiontorture/listener', 'tcp-writer/writer') AND client_addr IS NOT NULL")) == "3\n"
      }, "both processes connect over TCP")
    var cursors: [String] = []
    for index in 0..<20 {
      let entry =
        index % 4 == 3
        ? try await writer.logOut() : try await writer.logIn(as: "user-\(index)")
      cursors.append(try #require(entry).cursor.description)
    }
    var lines: [String] = []
    while lines.count < 20, let line = try await child.readLine(timeout: .seconds(30)) { lines.append(line) }
    #expect(lines == cursors.map { "\($0) tcp-writer" }, "\(fileBytes(scratch.file("stderr")) ?? Data())")
    #expect(try await child.wait(timeout: .seconds(30)) == 0)
    #expect(try writer.history(from: .beginning, limit: 100).map(\.cursor.description) == cursors)
  }
}

// MARK: Helpers

/// Checks what a subscriber received from `start`: exactly the entries after it that the log
/// holds (its cursors `start+1...head`, no gap, no duplicate, in order, each as `history` has
/// it), the last being the log's newest; and that every acknowledged write is in the log as
/// it was returned.
private func expectEveryChangeOnce(
  _ received: [SessionEntry], in store: SessionStore, acknowledged: [SessionEntry],
  from start: Cursor = .zero, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let head = try store.bounds().head
  let all = try store.history(from: .beginning, limit: .max)
  #expect(
    all.map(\.cursor.value) == Array(1..<(head.value + 1)), "the log has no hole",
    sourceLocation: sourceLocation)
  let history = all.filter { $0.cursor > start }
  #expect(
    received.map(\.cursor) == history.map(\.cursor), "every cursor once, in order",
    sourceLocation: sourceLocation)
  #expect(received == history, "each entry as the log has it", sourceLocation: sourceLocation)
  let byCursor = Dictionary(all.map { ($0.cursor, $0) }, uniquingKeysWith: { first, _ in first })
  for entry in acknowledged {
    #expect(
      byCursor[entry.cursor] == entry, "acknowledged write \(entry.cursor)", sourceLocation: sourceLocation)
  }
}

/// Follows a subscription on a task of its own, keeping every entry, until one renames or
/// signs in as `done`. The task ends with the follower (when a test throws before
/// ``finish(within:)``), and when the test is cancelled (its time limit) while it finishes.
private final class Follower: Sendable {
  private let received = Received()
  private let task: Task<Void, any Error>

  init(_ subscription: SessionSubscription) {
    task = Task { [received] in
      for try await entry in subscription {
        received.entries.withLock { $0.append(entry) }
        if entry.after.username == "done" { return }
      }
    }
  }

  deinit { task.cancel() }

  var entries: [SessionEntry] { received.entries.withLock { $0 } }

  /// Waits until `done` arrived (or the subscription threw) and returns what was received.
  /// - Throws: ``Overdue`` when `done` did not arrive within `timeout` (a hang guard: a lost
  ///   wake-up fails the test instead of hanging the run); what the subscription threw.
  func finish(within timeout: Duration = .seconds(120)) async throws -> [SessionEntry] {
    let task = task
    let timer = Task {
      try await Task.sleep(for: timeout)
      task.cancel()
    }
    defer { timer.cancel() }
    do {
      try await withTaskCancellationHandler {
        try await task.value
      } onCancel: {
        task.cancel()
      }
    } catch is CancellationError {}
    guard entries.last?.after.username == "done" else {
      throw Overdue("done did not arrive within \(timeout)")
    }
    return entries
  }

  private final class Received: Sendable {
    let entries = Mutex<[SessionEntry]>([])
  }
}

/// Renames the session again and again through `store` (`w0`, `w1`, …) until finished,
/// retrying a failed write (an `unavailable` server) after 50 ms; keeps the entries its
/// writes returned and the errors they threw. It writes with the blocking API on a thread of
/// its own, so that it keeps writing however busy the cooperative pool is; it stops when
/// finished, and when the writer goes (a test that threw before ``finish(within:)``).
private final class Writer: Sendable {
  private struct Progress {
    var acknowledged: [SessionEntry] = []
    var failures: [SessionStorageError] = []
    var stop = false
    /// Set by the writing thread when it returns: what it threw, or nil.
    var ended: Result<Void, any Error>?
  }
  /// Shared with the writing thread, which does not keep the writer alive.
  private final class Shared: Sendable {
    let progress = Mutex(Progress())
  }
  private let shared = Shared()
  private let store: SessionStore

  init(_ store: SessionStore) {
    self.store = store
    let shared = shared
    Thread.detachNewThread {
      let outcome = Result { try Self.write(through: store, shared) }
      shared.progress.withLock { $0.ended = outcome }
    }
  }

  deinit { shared.progress.withLock { $0.stop = true } }

  private static func write(through store: SessionStore, _ shared: Shared) throws {
    var index = 0
    while !shared.progress.withLock({ $0.stop }) {
      do {
        // nil: a retried write whose first attempt committed after all. The first signs in,
        // the others rename the active account.
        let written =
          index == 0 ? try store.blocking.logIn(as: "w0") : try store.blocking.rename(to: "w\(index)")
        if let entry = written {
          shared.progress.withLock { $0.acknowledged.append(entry) }
        }
        index += 1
        usleep(5_000)
      } catch let error as SessionStorageError {
        shared.progress.withLock { $0.failures.append(error) }
        usleep(50_000)
      }
    }
  }

  var count: Int { shared.progress.withLock { $0.acknowledged.count } }
  var acknowledged: [SessionEntry] { shared.progress.withLock { $0.acknowledged } }
  var failures: [SessionStorageError] { shared.progress.withLock { $0.failures } }

  /// Stops writing, then renames to `done` (retrying while the server is unavailable);
  /// returns every acknowledged entry, `done`'s last.
  /// - Throws: ``Overdue`` when the writing thread or `done` takes longer than `timeout` (a
  ///   hang guard); what the writing thread threw.
  func finish(within timeout: Duration = .seconds(120)) async throws -> [SessionEntry] {
    let deadline = ContinuousClock.now + timeout
    shared.progress.withLock { $0.stop = true }
    while true {
      if let ended = shared.progress.withLock({ $0.ended }) {
        try ended.get()
        break
      }
      guard ContinuousClock.now < deadline else { throw Overdue("the writer did not stop within \(timeout)") }
      try await Task.sleep(for: .milliseconds(5))
    }
    while true {
      do {
        let done = try #require(try await store.rename(to: "done"))
        return shared.progress.withLock { $0.acknowledged } + [done]
      } catch let error as SessionStorageError where error.code == .unavailable {
        shared.progress.withLock { $0.failures.append(error) }
        guard ContinuousClock.now < deadline else { throw Overdue("done was not written within \(timeout)") }
        try await Task.sleep(for: .milliseconds(50))
      }
    }
  }
}

/// A hang guard's time ran out: what did not happen in time.
private struct Overdue: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Terminates the backends whose `application_name` is `name`; how many there were.
private func terminate(_ name: String, on cluster: PostgresCluster) async throws -> Int {
  try await cluster.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(name)'"
  ).split(separator: "\n").filter { $0 == "t" }.count
}

/// A `psql` session that changed the username in a transaction and holds the session row
/// until ``release()``: it waits for a row in a gate table of its own (re-read every 20 ms,
/// for at most 90 s), then ends its transaction with `COMMIT` or `ROLLBACK`. Nothing but the
/// test decides how long the row is held; psql itself is given longer than its loop, so that
/// it is never killed while it holds the row.
private struct RowHolder {
  let cluster: PostgresCluster
  /// `public.gate_…`: a row in it releases the holder.
  let gate: String
  let session: Task<String, any Error>

  /// Starts the session and returns once it holds the row.
  init(
    of store: SessionStore, on cluster: PostgresCluster, setting username: String, then end: String
  ) async throws {
    let name = uniqueName("holder")
    let gate = "public.gate_" + name
    try await cluster.query("CREATE TABLE \(gate) (opened boolean)")
    self.cluster = cluster
    self.gate = gate
    session = Task {
      try await cluster.psql(
        """
        SET application_name = '\(name)';
        BEGIN;
        UPDATE session SET username = '\(username)' WHERE id = 1;
        DO $$ BEGIN
          WHILE NOT EXISTS (SELECT FROM \(gate)) AND clock_timestamp() < now() + interval '90 seconds' LOOP
            PERFORM pg_sleep(0.02);
          END LOOP;
        END $$;
        \(end);
        """, schema: store.requirePostgres().schema, timeout: .seconds(150))
    }
    let holds = await eventually {
      (try? await cluster.query(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(name)' AND query LIKE 'DO %'"))
        == "1\n"
    }
    try #require(holds, "psql holds the session row")
  }

  /// Lets the session end its transaction, and waits until it has.
  func release() async throws {
    try await cluster.query("INSERT INTO \(gate) VALUES (true)")
    _ = try await session.value
    try await cluster.query("DROP TABLE \(gate)")
  }
}

/// The state letter of a process in `/proc/PID/stat` (`T` when stopped).
private func processState(_ pid: pid_t) throws -> String {
  let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
  // "pid (comm) S …": the state follows the last ')'.
  guard let close = stat.lastIndex(of: ")") else { return "?" }
  return String(stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).prefix(1))
}

extension WakeMode {
  fileprivate var isPolling: Bool {
    if case .polling = self { return true }
    return false
  }
}

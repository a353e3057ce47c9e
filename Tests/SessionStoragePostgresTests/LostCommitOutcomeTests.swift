import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import SystemKit
import TestSupport
import Testing

/// A write whose connection is lost while its COMMIT runs learns the outcome on a new
/// connection, from the entry it finds at its cursor: the entry must be its own, not only
/// at its cursor. Here the COMMIT never succeeds (a deferred constraint trigger, added by
/// the test, holds it and then fails it), and another store's change commits at the very
/// cursor the lost write had: the lost write must say it was not committed, never return
/// an entry that is someone else's.
@Suite(.timeLimit(.minutes(10))) struct LostCommitOutcomeTests {
  @Test func aLostCommitWhoseCursorAnotherChangeTookIsNotReportedDone() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let origin = uniqueName("lost")
    let ours = try SessionStore(postgresURL: url, options: .init(origin: origin, lockTimeout: .seconds(90)))
    let other = try SessionStore(
      postgresURL: url, options: .init(origin: origin + "_other", lockTimeout: .seconds(90)))
    let first = try #require(try await ours.logIn(as: "alice"))
    let schema = try ours.requirePostgres().schema
    // Added after the stores opened (a writable open refuses a trigger of its own schema's
    // tables that the migrations did not make): our writes' COMMIT waits for a row in the
    // gate table, then fails.
    try await cluster.query(
      """
      CREATE TABLE lost_commit_gate ();
      CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $f$
      BEGIN
        WHILE NOT EXISTS (SELECT FROM "\(schema)".lost_commit_gate)
          AND clock_timestamp() < now() + interval '120 seconds' LOOP
          PERFORM pg_sleep(0.02);
        END LOOP;
        RAISE EXCEPTION 'this commit is refused by the test';
      END $f$;
      CREATE CONSTRAINT TRIGGER hold_commit AFTER UPDATE ON session_writer DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.origin = '\(origin)') EXECUTE FUNCTION hold_commit();
      """, schema: schema)

    // Our rename's COMMIT is held on the server.
    let lost = BlockingWrite { try ours.blocking.rename(to: "bob") }
    let held = try #require(
      try await backend(of: "\(origin)/writer", on: cluster, where: "wait_event = 'PgSleep'"),
      "the COMMIT waits in the trigger")
    // Another store's rename waits for the session_writer row, first in line.
    let winner = BlockingWrite { try other.blocking.rename(to: "mallory") }
    _ = try #require(
      try await backend(of: "\(origin)_other/writer", on: cluster, where: "wait_event_type = 'Lock'"),
      "the other write waits for the row")

    // The connection is lost while COMMIT runs: the store asks again on a new one, whose
    // row lock queues behind the other write.
    try #require(shutDownTCPConnections(localPort: held.port) == 1, "the connection is cut")
    _ = try #require(
      try await backend(
        of: "\(origin)/writer", on: cluster, where: "wait_event_type = 'Lock' AND pid <> \(held.pid)"),
      "the outcome check waits for the row")

    // The held COMMIT fails: our change never commits, and the other one takes its cursor.
    try await cluster.query("INSERT INTO lost_commit_gate DEFAULT VALUES", schema: schema)
    let taken = try #require(try await winner.value())
    #expect(taken.cursor == first.cursor.next, "the other change has the cursor the lost write had")
    let error = await #expect(throws: SessionStorageError.self, "the lost write is not reported done") {
      try await lost.value()
    }
    #expect(error?.code == .unavailable)
    #expect(error?.message.contains("not committed") == true, "\(String(describing: error))")
    #expect(try ours.history() == [first, taken])
    #expect(try ours.state.username == "mallory")
  }
}

extension LostCommitOutcomeTests {
  /// A logout of every account commits one entry per account in one transaction: when its
  /// connection is lost while that COMMIT runs on the server and the COMMIT then succeeds,
  /// the write token tells the store on a new connection, and it returns every entry.
  @Test func aLostCommitOfSeveralEntriesThatCommittedReturnsThemAll() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let origin = uniqueName("lostall")
    let ours = try SessionStore(postgresURL: url, options: .init(origin: origin, lockTimeout: .seconds(90)))
    try await ours.logIn(as: "alice")
    let bob = try #require(try await ours.logIn(as: "bob"))
    let schema = try ours.requirePostgres().schema
    // Our write's COMMIT waits for a row in the gate table, then goes through.
    try await cluster.query(
      """
      CREATE TABLE lost_commit_gate ();
      CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $f$
      BEGIN
        WHILE NOT EXISTS (SELECT FROM "\(schema)".lost_commit_gate)
          AND clock_timestamp() < now() + interval '120 seconds' LOOP
          PERFORM pg_sleep(0.02);
        END LOOP;
        RETURN NULL;
      END $f$;
      CREATE CONSTRAINT TRIGGER hold_commit AFTER UPDATE ON session_writer DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.origin = '\(origin)') EXECUTE FUNCTION hold_commit();
      """, schema: schema)

    let lost = Task { try await onThreadOfItsOwn { try ours.blocking.logOutAll() } }
    let held = try #require(
      try await backend(of: "\(origin)/writer", on: cluster, where: "wait_event = 'PgSleep'"),
      "the COMMIT waits in the trigger")
    try #require(shutDownTCPConnections(localPort: held.port) == 1, "the connection is cut")
    _ = try #require(
      try await backend(
        of: "\(origin)/writer", on: cluster, where: "wait_event_type = 'Lock' AND pid <> \(held.pid)"),
      "the outcome check waits for the old transaction's lock")
    try await cluster.query("INSERT INTO lost_commit_gate DEFAULT VALUES", schema: schema)

    let entries = try await lost.value
    #expect(entries.map(\.cursor) == [bob.cursor.next, bob.cursor.next?.next].compactMap { $0 })
    #expect(entries.map(\.change.description).sorted() == ["logout alice", "logout bob"])
    #expect(try ours.history(from: .after(bob.cursor)) == entries, "what it returned is what committed")
  }
}

/// The backend of `application_name` `name` for which `condition` holds in
/// `pg_stat_activity`, once there is one: its process id and the client's port.
private func backend(of name: String, on cluster: PostgresCluster, where condition: String) async throws
  -> (pid: Int, port: Int)?
{
  var found: (pid: Int, port: Int)?
  _ = await eventually {
    let row =
      (try? await cluster.query(
        "SELECT pid, client_port FROM pg_stat_activity WHERE application_name = '\(name)' AND \(condition)"))
      ?? ""
    let fields = row.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
    guard fields.count == 2, let pid = Int(fields[0]), let port = Int(fields[1]) else { return false }
    found = (pid, port)
    return true
  }
  return found
}

/// A blocking write on a thread of its own, so that a write that waits holds no thread of
/// the cooperative pool.
private struct BlockingWrite: Sendable {
  private let task: Task<SessionEntry?, any Error>

  init(_ body: @escaping @Sendable () throws -> SessionEntry?) {
    task = Task { try await onThreadOfItsOwn(body) }
  }

  /// What the write returned.
  func value() async throws -> SessionEntry? { try await task.value }
}

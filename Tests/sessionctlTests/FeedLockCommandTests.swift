import Foundation
import TestSupport
import Testing

/// A running `watch` on PostgreSQL and a lock on the feed held past the lock timeout.
@Suite(.timeLimit(.minutes(10))) struct FeedLockCommandTests {
  /// A `LOCK TABLE` (as a `VACUUM FULL` queued behind a long reader takes) held longer than
  /// the 5 s lock timeout, with no change meanwhile: `watch` waits it out and prints the
  /// next change, it does not exit.
  @Test func aWatchOutlastsALockOnTheFeedHeldPastTheLockTimeout() async throws {
    let server = try await PostgresCluster.shared()
    let url = server.freshStoreURL()
    let schema = try #require(url.components(separatedBy: "schema=").last)
    let sandbox = try Sandbox()
    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    let (watch, stderr) = try await sandbox.start(["--db", url, "--json", "watch", "--limit", "1"])
    #expect(try await watch.readLine()?.contains("snapshot") == true)
    _ = try await server.psql(
      "BEGIN; LOCK TABLE \(schema).session_changes IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(7); COMMIT;")
    #expect(try await sandbox.run(db: url, ["logout"]).status == 0)
    let line = try await watch.readLine()
    #expect(line?.contains("loggedOut") == true, "\(String(describing: line))")
    #expect(try await watch.wait(timeout: .seconds(60)) == 0)
    let said = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(!said.contains("error"), "\(said)")
  }
}

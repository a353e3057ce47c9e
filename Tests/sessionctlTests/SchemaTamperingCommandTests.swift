import Foundation
import Testing

/// sessionctl on a file whose schema was changed by hand: writes and reads refuse it (exit
/// 1) without touching it, and `check` reports the `schema` item with the repair.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SchemaTamperingCommandTests {
  @Test func aDroppedFeedTriggerIsRefusedByEveryCommandAndReportedByCheck() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, "DROP TRIGGER accounts_external_update")
    let before = try #require(sandbox.contents(db))
    for command in [
      ["login", "bob"], ["logout"], ["migrate"], ["compact", "--keep", "0"], ["status"], ["history"],
    ] {
      let outcome = try await sandbox.run(db: db, command)
      #expect(outcome.status == 1, "\(command): \(outcome)")
      #expect(outcome.stdout == "", "\(command)")
      #expect(
        outcome.stderr.hasPrefix(
          "sessionctl: error: \(db): the schema was changed by hand: the trigger accounts_external_update is missing"
        ),
        "\(command): \(outcome)")
      #expect(outcome.stderr.contains("migrations/0004_accounts.sql"), "\(command): \(outcome)")
      #expect(sandbox.contents(db) == before, "\(command) changed the file")
    }
    let check = try await sandbox.run(db: db, ["check"])
    #expect(check.status == 1, "\(check)")
    #expect(
      check.lines.contains {
        $0.hasPrefix("FAIL  schema ") && $0.contains("trigger accounts_external_update is missing")
      },
      "\(check)")
    #expect(check.stderr == "sessionctl: error: check found 1 problem in \(db)\n")
    #expect(sandbox.contents(db) == before)
  }
}

import Foundation
import Testing

/// Every number a command takes, at the largest value the SQL holds (`Int64.max`) and one
/// beyond: the largest works as documented, the next is refused with 65, naming the option
/// and the accepted range.
@Suite(.serialized, .timeLimit(.minutes(10))) struct NumberRangeTests {
  static let largest = String(Int64.max)
  static let beyond = "9223372036854775808"

  /// A command line with the number in it, what the largest value does, and what the
  /// value is called in the refusal.
  struct Case: CustomTestStringConvertible, Sendable {
    var arguments: @Sendable (String) -> [String]
    var option: String
    var noun: String
    /// The status and stdout (or stderr, for a refusal) of the largest value.
    var status: Int32
    var output: String
    var testDescription: String { arguments("N").joined(separator: " ") }
  }

  static let cases = [
    Case(
      arguments: { ["compact", "--keep", $0] }, option: "--keep", noun: "value", status: 0,
      output: "removed 0 entries; kept 1…2\n"),
    Case(
      arguments: { ["retention", "--keep", $0] }, option: "--keep", noun: "value", status: 0,
      output: "keep last  \(largest)\nmax age    no limit\nremoved 0 entries; kept 1…2\n"),
    Case(
      arguments: { ["history", "--limit", $0] }, option: "--limit", noun: "value", status: 0,
      output: "2 changes"),
    Case(
      arguments: { ["watch", "--since", "0", "--limit", $0] }, option: "--limit", noun: "value", status: -1,
      output: ""),
    Case(
      arguments: { ["history", "--since", $0] }, option: "--since", noun: "cursor", status: 65,
      output: "sessionctl: error: cursor \(largest) is ahead of the newest entry 2"),
    Case(
      arguments: { ["watch", "--since", $0] }, option: "--since", noun: "cursor", status: 65,
      output: "sessionctl: error: cursor \(largest) is ahead of the newest entry 2"),
    Case(
      arguments: { ["compact", "--before", $0] }, option: "--before", noun: "cursor", status: 65,
      output: "sessionctl: error: cursor \(largest) is ahead of the newest entry 2"),
  ]

  @Test(arguments: cases)
  func theLargestIntegerIsTakenAndOneMoreIsRefusedWithTheRange(_ test: Case) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    #expect(try await sandbox.run(db: db, ["rename", "bob"]).status == 0)
    if test.status >= 0 {
      let outcome = try await sandbox.run(db: db, test.arguments(Self.largest))
      #expect(outcome.status == test.status, "\(outcome)")
      switch test.output {
      case "2 changes": #expect(outcome.lines.count == 2, "\(outcome)")
      case let output where test.status == 0: #expect(outcome.stdout == output)
      case let output: #expect(outcome.stderr.hasPrefix(output), "\(outcome)")
      }
    } else {
      // `watch` with the largest limit prints both changes and goes on waiting.
      let (watch, _) = try await sandbox.start(["--db", db] + test.arguments(Self.largest))
      defer { watch.kill(SIGKILL) }
      #expect(try await watch.readLine()?.hasSuffix("add alice, login alice, activate alice") == true)
      #expect(try await watch.readLine()?.hasSuffix("rename alice → bob") == true)
      watch.kill(SIGTERM)
      #expect(try await watch.wait(timeout: .seconds(30)) == 143)
    }
    let refused = try await sandbox.run(db: db, test.arguments(Self.beyond))
    #expect(refused.status == 65)
    // `--since` also takes CURSOR@TIME, and says so.
    let otherForm =
      test.option == "--since" ? " (a cursor), or CURSOR@TIME with the time printed for that change" : ""
    #expect(
      refused.stderr
        == "sessionctl: error: invalid \(test.noun) '\(Self.beyond)' for '\(test.option)': expected a whole "
        + "number from 0 to \(Self.largest)\(otherForm)\n")
    #expect(try await sandbox.run(db: db, ["history"]).lines.count == 2, "nothing was deleted")
  }
}

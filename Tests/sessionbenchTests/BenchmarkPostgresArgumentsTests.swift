import Testing

@testable import sessionbench

/// `sessionbench --postgres URL`: the server of the `pg-*` scenarios, checked before anything
/// runs; a full run includes those scenarios only when it has a server.
struct BenchmarkPostgresArgumentsTests {
  @Test func aServerURLIsPassedOnAndTheScenariosAreNamed() throws {
    let url = "postgresql://bench@db.example:5432/sessions"
    #expect(
      try Command.parse(["--postgres", url, "pg-write"])
        == .bench(quick: false, json: nil, scenarios: ["pg-write"], postgres: url, named: true))
    #expect(
      try Command.parse(["--quick"])
        == .bench(quick: true, json: nil, scenarios: Scenarios.names, postgres: nil, named: false))
    #expect(Scenarios.names.suffix(3) == ["pg-write", "pg-read", "pg-deliver-remote"])
  }

  @Test(arguments: [
    ("sqlite:///tmp/x.db", "is not a PostgreSQL URL"),
    ("postgresql://u:pw@host/db?schema=mine", "names a schema"),
  ])
  func aBadServerURLIsAUsageError(url: String, message: String) throws {
    let error = try #require(throws: (any Error).self) { try Command.parse(["--postgres", url]) }
    let text = String(describing: error)
    #expect(text.contains(message), "\(text)")
    #expect(!text.contains("pw@"), "the password is printed: \(text)")
  }

  @Test func theHiddenChildrenTakeTheServerAndTheSchema() throws {
    #expect(
      try Command.parse(["child-pg-raw-listener", "--postgres", "postgresql://h/db", "--schema", "s"])
        == .childPostgresRawListener(server: "postgresql://h/db", schema: "s"))
    #expect(throws: (any Error).self) {
      try Command.parse(["child-pg-subscriber", "--postgres", "postgresql://h/db"])
    }
  }
}

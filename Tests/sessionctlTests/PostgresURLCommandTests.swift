import Foundation
import TestSupport
import Testing

@testable import sessionctl

/// What `sessionctl` does with a PostgreSQL URL before any server is asked: a URL libpq
/// cannot parse is the user's input to fix, and no secret of a URL reaches the terminal or
/// a hook.
@Suite(.timeLimit(.minutes(5))) struct PostgresURLCommandTests {
  /// libpq's parse errors quote the URL: the status is 65 (invalid input, not 77 "the
  /// server refused"), the one line says no server was contacted, and shows no password.
  @Test(arguments: [
    "postgresql://app:Tr0ub4dor@[::1/sessions?schema=front_desk",
    "postgresql://app:Tr0ub%zz4dor@127.0.0.1:1/sessions?schema=front_desk",
    "postgresql://app@127.0.0.1:1/sessions?password=Tr0ub&4dor&schema=front_desk",
    "postgresql://app:Tr0ub4dor@127.0.0.1:1/sessions?bogus=1&schema=front_desk",
    "postgresql://app:Tr0ub4dor@127.0.0.1:1/sessions?a=b=c&schema=front_desk",
  ])
  func aURLLibpqCannotParseExits65WithoutThePassword(_ url: String) async throws {
    let sandbox = try Sandbox()
    for arguments in [["status"], ["login", "alice"]] {
      let outcome = try await sandbox.run(db: url, arguments)
      #expect(outcome.status == 65, "\(arguments): \(outcome)")
      #expect(outcome.stderr.contains("libpq cannot read the URL"), "\(outcome)")
      #expect(outcome.stderr.contains("no server was contacted"), "\(outcome)")
      #expect(!outcome.stderr.contains("Tr0ub") && !outcome.stderr.contains("4dor"), "\(outcome)")
      #expect(outcome.stderr.split(separator: "\n").count == 1, "one line: \(outcome)")
    }
  }

  /// A combining mark beside the password's `:` does not make `sessionctl` print it.
  @Test func aCombiningMarkBesideTheColonShowsNoPassword() async throws {
    let sandbox = try Sandbox()
    let url = "postgresql://app:\u{0301}Tr0ub4dor@127.0.0.1:1/sessions?schema=front_desk"
    let outcome = try await sandbox.run(db: url, ["status"])
    #expect(outcome.status == 69, "\(outcome)")
    #expect(!outcome.stderr.contains("Tr0ub4dor"), "\(outcome)")
    #expect(outcome.stderr.contains("postgresql://app:***@127.0.0.1:1/"), "\(outcome)")
  }

  /// A hook gets `SESSIONCTL_DB` without the password and without `sslpassword`, the client
  /// key's passphrase, whatever marks stand beside the delimiters.
  @Test func aHookReceivesNoSecretOfTheURL() {
    let cases = [
      (
        "postgresql://app:\u{0301}Tr0ub4dor@db/sessions?schema=s",
        "postgresql://app@db/sessions?schema=s"
      ),
      (
        "postgresql://app@db/sessions?sslkey=/k.pem&sslpassword=Tr0ub4dor&schema=s",
        "postgresql://app@db/sessions?sslkey=/k.pem&schema=s"
      ),
      (
        "postgresql://app@db/sessions?schema=s&password=\u{200D}Tr0ub4dor",
        "postgresql://app@db/sessions?schema=s"
      ),
    ]
    for (url, expected) in cases {
      let inherited = ChangeCommand.inherited(["SESSIONCTL_DB": url, "PGPASSWORD": "Tr0ub4dor", "A": "b"])
      #expect(inherited == ["SESSIONCTL_DB": expected, "A": "b"], "\(url)")
    }
  }
}

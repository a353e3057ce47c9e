import Foundation
import SessionStorage
import SessionStoragePostgres
import Testing

/// A URL's secrets (its password and `sslpassword`) are found byte by byte, as libpq finds
/// them, and never shown: not by the store's URL, not in libpq's own messages, not to a hook.
@Suite struct URLSecretTests {
  /// Characters that extend the one before them into one grapheme cluster: a combining
  /// acute accent, a zero-width joiner, a variation selector, an emoji skin-tone modifier.
  static let extenders: [String] = ["\u{0301}", "\u{200D}", "\u{FE0F}", "\u{1F3FD}"]

  /// An extender right after a delimiter merges with it into one `Character`, which libpq
  /// does not see: it reads the bytes, and the delimiter is there.
  @Test(arguments: extenders)
  func aGraphemeExtenderBesideADelimiterHidesNoPassword(_ mark: String) {
    let cases = [
      (
        "postgresql://app:\(mark)Tr0ub4dor@db.internal/sessions?schema=front_desk",
        "postgresql://app:***@db.internal/sessions?schema=front_desk"
      ),
      (
        "postgresql://app:Tr0ub4dor@\(mark)db.internal/sessions",
        "postgresql://app:***@\(mark)db.internal/sessions"
      ),
      (
        "postgresql://app\(mark):Tr0ub4dor\(mark)@db.internal/sessions",
        "postgresql://app\(mark):***@db.internal/sessions"
      ),
      (
        "postgresql://db.internal/sessions?user=app&password=\(mark)Tr0ub4dor&schema=s",
        "postgresql://db.internal/sessions?user=app&password=***&schema=s"
      ),
      (
        "postgresql://db.internal/sessions?user=app\(mark)&password=Tr0ub4dor",
        "postgresql://db.internal/sessions?user=app\(mark)&password=***"
      ),
      ("host=db.internal password=\(mark)Tr0ub4dor dbname=s", "host=db.internal password=*** dbname=s"),
    ]
    for (url, expected) in cases {
      let shown = PostgresLocation.redacted(url)
      #expect(shown == expected, "\(url.unicodeScalars.map { $0.escaped(asASCII: true) }.joined())")
      #expect(!shown.contains("Tr0ub4dor"))
      #expect(PostgresPasswords.containsPassword(url))
      #expect(!PostgresPasswords.withoutPasswords(url).contains("Tr0ub4dor"), "\(url)")
    }
  }

  /// `sslpassword`, the client key's passphrase, is as secret as the password.
  @Test func anSSLPasswordIsNeverShownNorPassedOn() {
    let cases = [
      (
        "postgresql://app@db.internal/sessions?sslkey=/k.pem&sslpassword=K3yPass&schema=s",
        "postgresql://app@db.internal/sessions?sslkey=/k.pem&sslpassword=***&schema=s",
        "postgresql://app@db.internal/sessions?sslkey=/k.pem&schema=s"
      ),
      (
        "postgresql://app:Tr0ub4dor@db.internal/sessions?ssl%70assword=K3yPass",
        "postgresql://app:***@db.internal/sessions?ssl%70assword=***",
        "postgresql://app@db.internal/sessions"
      ),
      (
        "host=db.internal sslpassword='K3y Pass' dbname=sessions",
        "host=db.internal sslpassword=*** dbname=sessions",
        "host=db.internal dbname=sessions"
      ),
    ]
    for (url, redacted, stripped) in cases {
      #expect(PostgresLocation.redacted(url) == redacted)
      #expect(PostgresPasswords.withoutPasswords(url) == stripped)
      #expect(PostgresPasswords.containsPassword(url))
    }
  }

  /// libpq's parse errors quote the whole URL or a piece of it (a password that is not
  /// percent-encoded properly, a piece after a raw `&`): the error is `invalidArgument`,
  /// says that no server was contacted, and shows none of the password.
  @Test(arguments: [
    "postgresql://app:Tr0ub4dor@[::1/sessions?schema=front_desk",
    "postgresql://app:Tr0ub%zz4dor@127.0.0.1:1/sessions?schema=front_desk",
    "postgresql://app@127.0.0.1:1/sessions?password=Tr0ub&4dor&schema=front_desk",
    "postgresql://app@127.0.0.1:1/sessions?password=Tr0ub%004dor&schema=front_desk",
    "postgresql://app@127.0.0.1:1/sessions?sslpassword=Tr0ub4dor&bogus=1&schema=front_desk",
    "postgresql://app:Tr0ub4dor@127.0.0.1:1/sessions?a=b=c&schema=front_desk",
  ])
  func aURLLibpqCannotParseIsAnInvalidArgumentThatShowsNoPassword(_ url: String) {
    let error = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(connectTimeout: .seconds(2)))
    }
    #expect(error?.code == .invalidArgument, "\(String(describing: error))")
    let shown = error.map(String.init(describing:)) ?? ""
    #expect(shown.contains("libpq cannot read the URL"), "\(shown)")
    #expect(shown.contains("no server was contacted"), "\(shown)")
    #expect(!shown.contains("Tr0ub") && !shown.contains("4dor"), "\(shown)")
  }
}

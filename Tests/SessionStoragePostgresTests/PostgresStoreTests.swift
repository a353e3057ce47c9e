import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// What PostgreSQL adds to the contract: origins of other clients, refusals, URLs.
@Suite(.timeLimit(.minutes(10))) struct PostgresStoreTests {
  @Test func aPsqlUpdateIsExternalAndLibraryWritesNameTheirOrigin() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "front-desk"))
    #expect(
      store.appliedMigrations.map(\.name) == [
        "0001_session_and_feed", "0002_own_tables_only", "0003_feed_guard_by_head", "0004_accounts",
      ])
    let changes = try store.changes(from: .now)
    try await store.logIn(as: "alice")
    _ = try await cluster.psql("UPDATE session SET username = 'bob'", schema: store.requirePostgres().schema)
    let entries = try await first(2, of: changes)
    #expect(entries.map(\.origin) == ["front-desk", "external"])
    #expect(entries.last?.events == [.usernameChanged(from: "alice", to: "bob")])
    #expect(try store.state.username == "bob")
    let row = try await cluster.psql(
      "SELECT origin, head FROM session_writer", schema: store.requirePostgres().schema)
    #expect(row == "|2\n", "no origin outside a library write")
    // Each schema is a store of its own.
    let other = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "x"))
    #expect(try other.bounds().head == .zero, "a fresh schema is another store")
  }

  @Test func aSecondOpenOfASchemaAppliesNothingAndSharesTheFeed() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let first = try SessionStore(postgresURL: url, options: .init(origin: "one"))
    let second = try SessionStore(postgresURL: url, options: .init(origin: "two", readOnly: true))
    #expect(second.appliedMigrations.isEmpty)
    try await first.logIn(as: "a")
    #expect(try second.history().map(\.origin) == ["one"])
    await #expect(throws: SessionStorageError.self) { try await second.logOut() }
    #expect(code { try second.compact(keepingLast: 0) } == .readOnly)
    #expect(try second.check().map(\.verdict) == Array(repeating: .passed, count: 6))
  }

  /// Migrations run under an advisory lock: stores opening a new schema at once do not race.
  @Test func storesOpeningANewSchemaAtOnceMigrateItOnce() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let applied = try await withThrowingTaskGroup(of: Int.self) { group in
      for index in 0..<6 {
        // Each opener blocks on the migration lock: on a thread of its own, not the pool's.
        group.addTask {
          try await onThreadOfItsOwn {
            try SessionStore(postgresURL: url, options: .init(origin: "opener\(index)")).appliedMigrations
              .count
          }
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(applied.sorted() == [0, 0, 0, 0, 0, 4])
    let store = try SessionStore(postgresURL: url)
    #expect(
      try await cluster.psql("SELECT count(*) FROM schema_migrations", schema: store.requirePostgres().schema)
        == "4\n")
  }

  @Test func aReadOnlyStoreNeverCreatesASchema() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let error = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(readOnly: true))
    }
    #expect(error?.code == .notFound)
    let schema = String(url.split(separator: "=").last ?? "")
    #expect(try await cluster.psql("SELECT count(*) FROM pg_namespace WHERE nspname = '\(schema)'") == "0\n")
  }

  @Test func aNewerSchemaIsRefused() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let store = try SessionStore(postgresURL: url)
    _ = try await cluster.psql(
      "INSERT INTO schema_migrations VALUES (99, '0099_future', 'abc', now())",
      schema: store.requirePostgres().schema
    )
    let error = #expect(throws: SessionStorageError.self) { try SessionStore(postgresURL: url) }
    #expect(error?.code == .newerSchema)
    #expect(error?.message.contains("0099_future") == true)
  }

  @Test func aMismatchingChecksumIsRefused() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let store = try SessionStore(postgresURL: url)
    _ = try await cluster.psql(
      "UPDATE schema_migrations SET checksum = 'edited'", schema: store.requirePostgres().schema)
    #expect(code { try SessionStore(postgresURL: url) } == .checksumMismatch)
    #expect(code { try SessionStore(postgresURL: url, options: .init(readOnly: true)) } == .checksumMismatch)
  }

  @Test func aSchemaWithSomeoneElsesTablesIsRefusedAndLeftAlone() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let schema = String(url.split(separator: "=").last ?? "")
    _ = try await cluster.psql("CREATE SCHEMA \(schema); CREATE TABLE \(schema).invoices (id int)")
    let error = #expect(throws: SessionStorageError.self) { try SessionStore(postgresURL: url) }
    #expect(error?.code == .foreignDatabase)
    #expect(error?.message.contains("invoices") == true)
    #expect(
      try await cluster.psql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = '\(schema)'")
        == "invoices\n")
  }

  @Test(arguments: ["Front", "1abc", "a-b", "a;drop", "", String(repeating: "s", count: 41), "caf\u{E9}"])
  func badSchemaNamesAreRefusedBeforeConnecting(_ schema: String) throws {
    // Port 1: nothing listens there, so a connection attempt would be `unavailable`.
    let url = "postgresql://postgres@127.0.0.1:1/postgres?schema=" + schema
    let error = #expect(throws: SessionStorageError.self) { try SessionStore(postgresURL: url) }
    #expect(error?.code == .invalidArgument)
    #expect(error?.message.contains("schema") == true)
  }

  @Test func anUnreachableServerIsUnavailableAndThePasswordIsNeverShown() throws {
    let url = "postgresql://app:s3cr3t-pw@127.0.0.1:1/postgres?schema=front_desk"
    let error = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(connectTimeout: .seconds(2)))
    }
    #expect(error?.code == .unavailable)
    let shown = error.map(String.init(describing:)) ?? ""
    #expect(!shown.contains("s3cr3t"), "\(shown)")
    #expect(shown.contains("postgresql://app:***@127.0.0.1:1/postgres?schema=front_desk"), "\(shown)")
  }

  @Test func aURLThatIsNotPostgresIsAnInvalidArgument() {
    for url in ["mysql://a:pw@b/c", "/var/lib/session.db", "postgresql:/x"] {
      let error = #expect(throws: SessionStorageError.self) { try SessionStore(postgresURL: url) }
      #expect(error?.code == .invalidArgument)
      #expect(error?.message.contains(":pw@") == false)
    }
  }

  @Test(arguments: [
    ("postgresql://u:pw@h:5432/db?schema=s", "postgresql://u:***@h:5432/db?schema=s"),
    ("postgres://u@h/db", "postgres://u@h/db"),
    ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
    ("postgresql://h/db?user=u&password=pw&schema=s", "postgresql://h/db?user=u&password=***&schema=s"),
    ("postgresql://u:pw@h1,h2/db", "postgresql://u:***@h1,h2/db"),
  ])
  func urlsAreRedacted(_ url: String, _ redacted: String) {
    #expect(PostgresLocation.redacted(url) == redacted)
  }

  @Test func theStoreShowsItsURLRedacted() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let store = try SessionStore(postgresURL: url)
    #expect(try store.requirePostgres().url == PostgresLocation.redacted(url))
    #expect(try store.requirePostgres().schema.hasPrefix("t_"))
  }

  @Test func checkFindsAStateChangedWithoutAFeedEntry() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL())
    try await store.logIn(as: "a")
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    _ = try await cluster.psql(
      "ALTER TABLE accounts DISABLE TRIGGER accounts_feed; UPDATE accounts SET username = 'ghost'; "
        + "ALTER TABLE accounts ENABLE TRIGGER accounts_feed", schema: store.requirePostgres().schema)
    let failed = try store.check().filter { $0.verdict == .failed }.map(\.check)
    #expect(failed == [.state])
    _ = try await cluster.psql(
      "ALTER TABLE accounts DISABLE TRIGGER accounts_feed", schema: store.requirePostgres().schema)
    #expect(try store.check().filter { $0.verdict == .failed }.map(\.check) == [.schema, .state])
  }

  /// The write returns the entries its statements made; with the recording trigger disabled
  /// or dropped there is none, and the write is rolled back instead of returning a change
  /// that is not in the feed.
  @Test func aWriteWithoutTheFeedTriggerIsRolledBack() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL())
    try await store.logIn(as: "alice")
    let refused = { (how: String) async throws in
      do {
        try await store.rename(to: "bob")
        Issue.record("a write without the trigger returned a change (\(how))")
      } catch let error as SessionStorageError {
        #expect(error.code == .tamperedSchema)
        #expect(error.message.contains("roster_feed or session_feed trigger"), "\(error)")
      }
      #expect(try store.state.username == "alice", "rolled back (\(how))")
      #expect(
        try await cluster.psql("SELECT username FROM session", schema: store.requirePostgres().schema)
          == "alice\n")
    }
    _ = try await cluster.psql(
      "ALTER TABLE accounts DISABLE TRIGGER accounts_feed", schema: store.requirePostgres().schema)
    try await refused("disabled")
    _ = try await cluster.psql(
      "ALTER TABLE accounts ENABLE TRIGGER accounts_feed", schema: store.requirePostgres().schema)
    #expect(try await store.rename(to: "carol")?.cursor == Cursor(2), "works again once enabled")
    try await store.rename(to: "alice")
    _ = try await cluster.psql(
      "DROP TRIGGER accounts_feed ON accounts", schema: store.requirePostgres().schema)
    try await refused("dropped")
    #expect(try store.bounds().head == Cursor(3))
  }

  /// A role the schema's owner did not let in is told so, with the GRANT that lets it in,
  /// instead of being shown an empty schema (information_schema hides what a role may not
  /// use); nothing is created or written.
  @Test func aRoleThatMayNotUseTheSchemaIsToldSoAndChangesNothing() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let owner = try SessionStore(postgresURL: url)
    try await owner.logIn(as: "alice")
    let role = "clerk_\(UInt32.random(in: 0...UInt32.max))"
    _ = try await cluster.psql("CREATE ROLE \(role) LOGIN")
    var components = try #require(URLComponents(string: url))
    components.user = role
    let clerkURL = try #require(components.string)
    for readOnly in [true, false] {
      #expect(
        code { try SessionStore(postgresURL: clerkURL, options: .init(readOnly: readOnly)) }
          == .permissionDenied)
    }
    do {
      _ = try SessionStore(postgresURL: clerkURL)
    } catch let error as SessionStorageError {
      #expect(
        try error.message.contains("role \(role) may not use schema \(owner.requirePostgres().schema)"),
        "\(error)")
      #expect(
        try error.message.contains("GRANT USAGE ON SCHEMA \"\(owner.requirePostgres().schema)\" TO \(role)"),
        "\(error)")
    }
    #expect(
      try await cluster.psql(
        "SELECT count(*) FROM pg_namespace WHERE nspname = '\(owner.requirePostgres().schema)'")
        == "1\n")

    // Let in to read: it reads; its writes are refused and change nothing.
    _ = try await cluster.psql(
      "GRANT USAGE ON SCHEMA \(owner.requirePostgres().schema) TO \(role); GRANT SELECT ON ALL TABLES IN SCHEMA \(owner.requirePostgres().schema) TO \(role)"
    )
    #expect(try SessionStore(postgresURL: clerkURL, options: .init(readOnly: true)).state.username == "alice")
    let clerk = try SessionStore(postgresURL: clerkURL)
    do {
      try await clerk.logIn(as: "mallory")
      Issue.record("a role allowed only to read wrote")
    } catch let error as SessionStorageError {
      #expect(error.code == .permissionDenied, "\(error)")
    }
    #expect(try owner.state.username == "alice")
    #expect(try owner.bounds().head == Cursor(1))
  }
}

extension PostgresStoreTests {
  /// The refusal of a role that may not use the schema says what to GRANT, as SQL: run word
  /// for word, the read part lets the role read only, and all of it lets it write and compact.
  @Test func aRoleGrantedExactlyWhatTheHintSaysReadsOrWritesAndCompacts() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let owner = try SessionStore(postgresURL: url, options: .init(origin: "owner"))
    try await owner.logIn(as: "alice")
    let role = "hinted_\(UInt32.random(in: 0...UInt32.max))"
    try await cluster.query("CREATE ROLE \(role) LOGIN")
    var components = try #require(URLComponents(string: url))
    components.user = role
    let roleURL = try #require(components.string)
    let error = #expect(throws: SessionStorageError.self) { try SessionStore(postgresURL: roleURL) }
    let hint = error?.message ?? ""
    let grants = hint.components(separatedBy: "GRANT ").dropFirst().compactMap { part in
      part.split(separator: ";", maxSplits: 1).first.map { "GRANT " + $0 + ";" }
    }
    #expect(grants.count == 5, "\(hint)")

    try await cluster.query(grants.prefix(2).joined(separator: "\n"))
    let reader = try SessionStore(postgresURL: roleURL, options: .init(origin: "reader", readOnly: true))
    #expect(try reader.state.username == "alice")
    let early = try SessionStore(postgresURL: roleURL, options: .init(origin: "clerk"))
    await #expect(throws: SessionStorageError.self, "read grants do not write") {
      try await early.rename(to: "eve")
    }

    try await cluster.query(grants.dropFirst(2).joined(separator: "\n"))
    let clerk = try SessionStore(postgresURL: roleURL, options: .init(origin: "clerk"))
    #expect(try await clerk.rename(to: "bob")?.cursor == Cursor(2))
    #expect(try await clerk.logOut()?.cursor == Cursor(3))
    #expect(try clerk.compact(keepingLast: 1).removed == 2)
    #expect(try owner.history().map(\.origin) == ["clerk"])
    #expect(try clerk.check().allSatisfy { $0.verdict == .passed })
  }

  /// A schema dropped under a subscriber (before a `pg_restore`, say) ends the subscription
  /// as vanished history, not with a raw relation error.
  @Test func aSchemaDroppedUnderASubscriberEndsItAsVanishedHistory() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(),
      options: .init(origin: "dropped", safetyPollInterval: .milliseconds(200)))
    let first = try #require(try await store.logIn(as: "alice"))
    let changes = try store.changes(from: .after(first.cursor))
    try await cluster.query("DROP SCHEMA \(store.requirePostgres().schema) CASCADE")
    do {
      for try await entry in changes { Issue.record("an entry after the drop: \(entry)") }
      Issue.record("the subscription ended without an error")
    } catch let error as FeedError {
      guard case .historyRewritten(let cursor, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(cursor <= first.cursor)
      #expect(reason.contains("dropped or renamed"), "\(reason)")
    }
  }

  /// A role limited to one connection, taken by its reader: the LISTEN connection is turned
  /// away for now (too many connections). The mode says what really happens, the safety poll
  /// at its own interval, and changes still arrive.
  @Test func aListenConnectionWithoutASlotSaysItPollsAtTheSafetyInterval() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let writer = try SessionStore(postgresURL: url, options: .init(origin: "slots-writer"))
    let role = "slotless_\(UInt32.random(in: 0...UInt32.max))"
    // Not a superuser: the limit does not bind those.
    try await cluster.query(
      "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 1; GRANT USAGE ON SCHEMA \(writer.requirePostgres().schema) TO \(role); "
        + "GRANT SELECT ON ALL TABLES IN SCHEMA \(writer.requirePostgres().schema) TO \(role)")
    try await withCleanup {
      let store = try SessionStore(
        postgresURL: url + "&user=\(role)",
        options: .init(origin: "slotless", readOnly: true, safetyPollInterval: .milliseconds(300)))
      let changes = try store.changes(from: .now)
      guard case .polling(let interval, let reason) = changes.wakeMode else {
        Issue.record("\(changes.wakeMode)")
        return
      }
      #expect(interval == .milliseconds(300), "subscribers are woken at the safety poll: \(reason)")
      #expect(reason.contains("too many connections"), "\(reason)")
      #expect(reason.contains("connecting again in"), "\(reason)")
      let written = try #require(try await writer.logIn(as: "alice"))
      var iterator = changes.makeAsyncIterator()
      #expect(try await iterator.next() == written)
    } cleanup: {
      _ = try? await cluster.query("DROP OWNED BY \(role); DROP ROLE IF EXISTS \(role)")
    }
  }
}

extension PostgresStoreTests {
  /// A username that psql stored in NFD fails `check`, which gives the SQL that repairs it;
  /// run as given, the username is NFC, the feed records a change without events, and
  /// `check` passes.
  @Test func checkGivesTheRepairOfAUsernameStoredInNFD() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    try await store.logIn(as: "Jos\u{E9}")
    try await cluster.query(
      "UPDATE session SET username = U&'Jos\\0065\\0301'", schema: store.requirePostgres().schema)
    #expect(try await store.rename(to: "Jos\u{E9}") == nil, "only the bytes differ: no change")
    let username = try #require(try store.check().first { $0.check == .username })
    #expect(username.verdict == .failed)
    let repair = try #require(
      username.detail.range(of: "UPDATE ").map { String(username.detail[$0.lowerBound...]) },
      "\(username.detail)")
    try await cluster.query(repair)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    #expect(try store.state.username.map { Array($0.unicodeScalars) } == Array("Jos\u{E9}".unicodeScalars))
    #expect(try store.history().last?.events == [], "recorded as a change without events")
  }
}

extension PostgresStoreTests {
  /// The characters of RFC 3986 that are reserved or mean something in a URL, the percent
  /// sign, a space and the quotes.
  static let reservedCharacters = Array(":/?#[]@!$&'()*+,;=% \"")

  /// A password holding any of them, raw or percent-encoded, in the user part, in a
  /// `password` parameter or in the key/value form, is never shown; the rest of the URL is.
  @Test(arguments: reservedCharacters)
  func aPasswordHoldingAReservedCharacterIsNeverShown(_ character: Character) {
    let password = "Tr0ub\(character)dor"
    let encoded = password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? password
    let cases = [
      (
        "postgresql://app:\(password)@db.internal:5432/sessions?schema=front_desk",
        "postgresql://app:***@db.internal:5432/sessions?schema=front_desk"
      ),
      ("postgres://app:\(encoded)@db1,db2/sessions", "postgres://app:***@db1,db2/sessions"),
      (
        "postgresql://app@db.internal/sessions?password=\(password)&schema=front_desk",
        "postgresql://app@db.internal/sessions?password=***&schema=front_desk"
      ),
      (
        "postgresql://db.internal/sessions?user=app&password=\(encoded)",
        "postgresql://db.internal/sessions?user=app&password=***"
      ),
      (
        "host=db.internal password='\(password.replacingOccurrences(of: "'", with: "\\'"))' dbname=sessions",
        "host=db.internal password=*** dbname=sessions"
      ),
    ]
    for (url, expected) in cases {
      let shown = PostgresLocation.redacted(url)
      #expect(shown == expected, "\(url)")
      #expect(!shown.contains("Tr0ub") && !shown.contains("dor"), "\(url) → \(shown)")
    }
  }

  /// The URL of a store (and its errors) never shows a password with a raw `?`, which libpq
  /// reads as part of the password.
  @Test func aStoreWhosePasswordHoldsAQuestionMarkNeverShowsIt() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL().replacingOccurrences(of: "postgres@", with: "postgres:Tr0ub?dor@")
    let error = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(readOnly: true))
    }
    #expect(error?.code == .notFound)
    #expect(!String(describing: error).contains("Tr0ub"), "\(String(describing: error))")
    let store = try SessionStore(postgresURL: url)  // the server trusts: the password is not asked for
    #expect(
      try store.requirePostgres().url.contains("postgres:***@127.0.0.1"),
      "\(String(describing: store.postgres))")
    #expect(try !store.requirePostgres().url.contains("Tr0ub"))
  }
}

/// The code of the `SessionStorageError` that `body` throws, or nil.
private func code(of body: () throws -> some Any) -> SessionStorageError.Code? {
  do {
    _ = try body()
    return nil
  } catch {
    return (error as? SessionStorageError)?.code
  }
}

/// The first `count` entries of a subscription.
private func first(_ count: Int, of subscription: SessionSubscription) async throws -> [SessionEntry] {
  var entries: [SessionEntry] = []
  for try await entry in subscription {
    entries.append(entry)
    if entries.count == count { break }
  }
  return entries
}

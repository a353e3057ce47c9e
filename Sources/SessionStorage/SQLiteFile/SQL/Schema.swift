/// A store's `sqlite_master` compared with what its applied migrations create (built once
/// per process in memory): a trigger dropped by hand would let writes skip their feed entry,
/// so a file whose schema differs is refused before anything is written.
enum Schema {
  /// One row of `sqlite_master`.
  struct Object: Hashable, Sendable {
    /// `table`, `index`, `trigger` or `view`.
    var type: String
    var name: String
    /// The table an index or trigger belongs to (a table's own name for a table).
    var table: String
    /// The `CREATE` statement, normalized (see ``normalized(_:)``); nil for the indexes
    /// SQLite makes for constraints.
    var sql: String?

    /// `the trigger session_feed`.
    var phrase: String { "the \(type) \(name)" }
  }

  /// How a file's schema differs from what its applied migrations create.
  enum Difference: Equatable, Sendable {
    /// An object the migrations create is not there.
    case missing(Object, origin: String)
    /// An object no migration creates is there.
    case extra(Object)
    /// An object the migrations create is there with other SQL (or on another table).
    case changed(Object, origin: String)

    /// What is wrong, in a few words.
    var finding: String {
      switch self {
      case .missing(let object, _): "\(object.phrase) is missing"
      case .extra(let object): "\(object.phrase) is not part of the schema"
      case .changed(let object, let origin): "\(object.phrase) differs from the one \(origin) creates"
      }
    }

    /// How to repair it with the sqlite3 shell.
    var repair: String {
      switch self {
      case .missing(let object, let origin):
        "re-create \(object.phrase) with its SQL in \(origin)"
      case .extra(let object):
        "drop \(object.phrase) (DROP \(object.type.uppercased()) \(object.name))"
      case .changed(let object, let origin):
        "drop \(object.phrase) and re-create it with its SQL in \(origin)"
      }
    }
  }

  /// One row of `sqlite_master` as SQLite keeps it, before ``normalized(_:)``.
  struct Row: Equatable, Sendable {
    var type: String
    var name: String
    var table: String
    var sql: String?
  }

  /// The schema after 0, 1, … ``Migrator/known``.count migrations, built once per process.
  static var expected: Result<[[Object]], SessionStorageError> { reference.map(\.schemas) }

  /// The rows of `sqlite_master` after 0, 1, … migrations, as ``rows(on:)`` reads them.
  static var expectedRows: [[Row]]? { try? reference.get().rows }

  /// The same rows as the build machine's SQLite stored them, embedded by the
  /// EmbedMigrations plugin. A file that holds these very rows holds what the migrations
  /// create, so it is accepted without building ``reference`` (the migrations run in
  /// memory, most of a command's start); any other file is compared with ``reference``,
  /// which this SQLite builds. (`SchemaTests` checks that the two are equal.)
  static let builtRows: [[Row]] = EmbeddedMigrations.schemaRows.map { rows in
    rows.map { Row(type: $0.type, name: $0.name, table: $0.table, sql: $0.sql) }
  }

  /// The table of normalized texts of ``reference``; nil when the reference could not be built.
  static var normalizedTexts: [String: String]? { try? reference.get().normalizedTexts }

  /// The reference schemas, the rows they were made from, and each `CREATE` statement in
  /// them as SQLite keeps its text, mapped to ``normalized(_:)`` of that text. A file the
  /// migrations made holds these very rows and texts, so reading its schema compares its rows
  /// with these, and normalizes a text that differs only when it is not one of these: the
  /// value found is what ``normalized(_:)`` returns for that text.
  private static let reference:
    Result<(schemas: [[Object]], rows: [[Row]], normalizedTexts: [String: String]), SessionStorageError> = {
      do {
        return .success(try build())
      } catch let error as SessionStorageError {
        return .failure(error)
      } catch {
        return .failure(SessionStorageError(.sqlite, "cannot build the reference schema: \(error)"))
      }
    }()

  /// Applies the embedded migrations one by one to an in-memory database and lists its
  /// schema before the first and after each, and the normalized form of each statement's text.
  private static func build() throws -> (
    schemas: [[Object]], rows: [[Row]], normalizedTexts: [String: String]
  ) {
    let connection = try Connection(path: ":memory:", mode: .memory)
    var rows = [try Self.rows(on: connection)]
    for migration in Migrator.known {
      try connection.transaction(.immediate) {
        try Migrator.apply(migration, on: connection, now: { "1970-01-01T00:00:00.000Z" })
      }
      rows.append(try Self.rows(on: connection))
    }
    var texts: [String: String] = [:]
    for row in rows.joined() { if let text = row.sql { texts[text] = normalized(text) } }
    return (rows.map { $0.map { object($0) } }, rows, texts)
  }

  /// The rows of the file's `sqlite_master`, SQLite's statistics tables (`ANALYZE`) left out.
  static func rows(on connection: Connection) throws -> [Row] {
    try connection.query(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT GLOB 'sqlite_stat[0-9]*' "
        + "ORDER BY type, name"
    ) { statement in
      var rows: [Row] = []
      while try statement.step() {
        rows.append(
          Row(
            type: statement.lossyText(at: 0) ?? "", name: statement.lossyText(at: 1) ?? "",
            table: statement.lossyText(at: 2) ?? "", sql: statement.lossyText(at: 3)))
      }
      return rows
    }
  }

  /// The schema objects of the file, SQLite's statistics tables (`ANALYZE`) left out.
  static func objects(on connection: Connection, normalizedTexts: [String: String] = [:]) throws -> [Object] {
    try rows(on: connection).map { object($0, normalizedTexts: normalizedTexts) }
  }

  /// The object of a row. A statement whose text is a key of `normalizedTexts` takes its
  /// value as its normalized form (see ``reference``).
  static func object(_ row: Row, normalizedTexts: [String: String] = [:]) -> Object {
    Object(
      type: row.type, name: row.name, table: row.table,
      sql: row.sql.map { normalizedTexts[$0] ?? normalized($0) })
  }

  /// How the file's schema differs from the one `applied` migrations create; empty when
  /// it is exactly that. `ignoringLedger` leaves the migrator's `schema_migrations` table
  /// out of the reference.
  static func differences(on connection: Connection, applied: Int, ignoringLedger: Bool = false) throws
    -> [Difference]
  {
    let rows = try Self.rows(on: connection)
    // The rows the migrations made, unchanged: equal rows make equal objects, in the same
    // order, so each expected object is found as it is and there is no other.
    if !ignoringLedger, builtRows.indices.contains(applied), rows == builtRows[applied] { return [] }
    let (schemas, expectedRows, normalizedTexts) = try reference.get()
    guard schemas.indices.contains(applied) else { return [] }
    if !ignoringLedger, rows == expectedRows[applied] { return [] }
    let reference = schemas[applied].filter { !ignoringLedger || $0.name != "schema_migrations" }
    let actual = rows.map { object($0, normalizedTexts: normalizedTexts) }
    func key(_ object: Object) -> String { object.type + " " + object.name }
    let actualByKey = Dictionary(actual.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
    let referenceKeys = Set(reference.map(key))
    var differences: [Difference] = []
    for object in reference {
      // Where the object comes from is looked up only for a difference, which names it.
      guard let found = actualByKey[key(object)] else {
        differences.append(.missing(object, origin: origin(of: object, in: schemas)))
        continue
      }
      if found.sql != object.sql || found.table != object.table {
        differences.append(.changed(object, origin: origin(of: object, in: schemas)))
      }
    }
    differences += actual.filter { !referenceKeys.contains(key($0)) }.map { .extra($0) }
    return differences
  }

  /// Throws ``SessionStorageError/Code-swift.enum/tamperedSchema`` when the file's schema
  /// is not exactly the one `applied` migrations create.
  static func verify(on connection: Connection, applied: Int) throws {
    try verify(try differences(on: connection, applied: applied), path: connection.path)
  }

  /// Throws ``SessionStorageError/Code-swift.enum/tamperedSchema`` when there are
  /// `differences`.
  static func verify(_ differences: [Difference], path: String) throws {
    guard !differences.isEmpty else { return }
    throw SessionStorageError(.tamperedSchema, message(differences), path: path)
  }

  /// What is wrong, why the file is refused, and how to repair it.
  static func message(_ differences: [Difference]) -> String {
    "the schema was changed by hand: " + differences.map(\.finding).joined(separator: "; ")
      + ". Writes could not be trusted to reach the feed, so the file is refused and left as it is: "
      + "restore the file from a backup, or repair it with the sqlite3 shell: "
      + differences.map(\.repair).joined(separator: "; ")
  }

  /// Where the SQL of an expected object is: the migration file that first creates it.
  private static func origin(of object: Object, in schemas: [[Object]]) -> String {
    if object.name == "schema_migrations" { return "the migrator (sessionctl migrate on a new file)" }
    if object.name.hasPrefix("sqlite_") { return "SQLite itself (it comes with its table)" }
    guard
      let index = schemas.firstIndex(where: {
        $0.contains { $0.type == object.type && $0.name == object.name }
      }),
      index >= 1, index <= Migrator.known.count
    else { return "the migrations" }
    return "migrations/\(Migrator.known[index - 1].name).sql"
  }

  /// A `CREATE` statement reduced to what SQLite reads: comments and runs of whitespace
  /// removed (a single space kept between two words), keywords and identifiers in lower
  /// case, string literals kept as they are, a trailing semicolon dropped. The SQL of a
  /// migration typed again with other spacing or case compares equal.
  static func normalized(_ sql: String) -> String {
    let bytes = Array(sql.utf8)
    var output: [UInt8] = []
    output.reserveCapacity(bytes.count)
    var index = 0
    var separated = false
    func isWord(_ byte: UInt8) -> Bool {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "'"),
        UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["), UInt8(ascii: "]"), 0x80...0xFF:
        true
      default: false
      }
    }
    func lowered(_ byte: UInt8) -> UInt8 {
      (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
    while index < bytes.count {
      let byte = bytes[index]
      let next = index + 1 < bytes.count ? bytes[index + 1] : 0
      switch byte {
      case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C:
        separated = true
        index += 1
        continue
      case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
        while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
        separated = true
        continue
      case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
        index += 2
        while index < bytes.count,
          !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count
            && bytes[index + 1] == UInt8(ascii: "/"))
        {
          index += 1
        }
        index = min(bytes.count, index + 2)
        separated = true
        continue
      default:
        break
      }
      if separated, let last = output.last, isWord(last), isWord(byte) { output.append(UInt8(ascii: " ")) }
      separated = false
      switch byte {
      case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["):
        // A quoted string or identifier, to its closing quote (a doubled quote is part of it).
        let close = byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : byte
        let keepsCase = byte == UInt8(ascii: "'")
        output.append(byte)
        index += 1
        while index < bytes.count {
          let character = bytes[index]
          output.append(keepsCase ? character : lowered(character))
          index += 1
          if character == close {
            guard close != UInt8(ascii: "]"), index < bytes.count, bytes[index] == close else { break }
            output.append(close)
            index += 1
          }
        }
      default:
        output.append(lowered(byte))
        index += 1
      }
    }
    while let last = output.last, last == UInt8(ascii: ";") { output.removeLast() }
    return String(decoding: output, as: UTF8.self)
  }
}

/// The one error type of every store: what went wrong, where, and the database's own words.
///
/// ``SessionStore`` throws it whichever backend holds it, so that an app (and `sessionctl`)
/// maps failures to messages and exit codes in one place. Most codes can come from any
/// backend that reaches a database; a few name a failure only a file can meet, and their
/// documentation says so. A backend in another module adds its own codes (a server's
/// `unavailable`, for one) as static members of ``Code``.
public struct SessionStorageError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What kind of failure this is; stable, for programs to switch on (with a `default`:
  /// later versions may add codes) and to `catch`: `catch SessionStorageError.Code.busy`.
  public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code's name, e.g. `invalidUsername`.
    public let rawValue: String

    /// The code named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The code's name.
    public var description: String { rawValue }

    // MARK: Every store

    /// A username broke one of the rules of ``Username``.
    public static let invalidUsername = Code(rawValue: "invalidUsername")
    /// An origin name was empty, too long or the reserved word `external`.
    public static let invalidOrigin = Code(rawValue: "invalidOrigin")
    /// An argument out of its range, such as a negative limit or count; nothing was done.
    public static let invalidArgument = Code(rawValue: "invalidArgument")
    /// A conditional write found the store (or its account) at another cursor than it
    /// expected: another writer committed first. Nothing was written.
    public static let conflict = Code(rawValue: "conflict")
    /// A write named an account the roster does not hold; nothing was written.
    public static let accountNotFound = Code(rawValue: "accountNotFound")
    /// A rename chose the username of another account; nothing was written.
    public static let usernameTaken = Code(rawValue: "usernameTaken")
    /// A login would add an account past ``SessionRoster/limit``; nothing was written.
    public static let rosterFull = Code(rawValue: "rosterFull")
    /// The feed's cursor reached the largest integer (`Int64.max`), so no further change
    /// can be numbered. The library counts from 1 and cannot get there: a row was inserted
    /// (or the sequence set) by hand. The message says how to repair the store.
    public static let cursorsExhausted = Code(rawValue: "cursorsExhausted")

    // MARK: Stores on a database (SQLite and PostgreSQL)

    /// The file (or PostgreSQL schema) holds tables of someone else's.
    public static let foreignDatabase = Code(rawValue: "foreignDatabase")
    /// The store was written by a newer schema than this build knows.
    public static let newerSchema = Code(rawValue: "newerSchema")
    /// The store's recorded migrations differ from the ones in this build.
    public static let checksumMismatch = Code(rawValue: "checksumMismatch")
    /// The store's tables, indexes, triggers or views (on PostgreSQL, also its functions)
    /// differ from the ones its applied migrations create (a trigger dropped or added by
    /// hand, a table altered). Writes are refused, and so are reads through a read-only
    /// instance; ``SessionStore/check()`` reports it. The message names each object and how
    /// to repair it.
    public static let tamperedSchema = Code(rawValue: "tamperedSchema")
    /// A read-only open found a store that needs migrating (or does not exist).
    public static let needsMigration = Code(rawValue: "needsMigration")
    /// The file (or the store in a PostgreSQL schema) does not exist and this open may not
    /// create it.
    public static let notFound = Code(rawValue: "notFound")
    /// The store was opened read-only, or its file or directory cannot be written.
    public static let readOnly = Code(rawValue: "readOnly")
    /// This user may not read the file, or (to write) may not write it or its directory; on
    /// PostgreSQL, the role may not use the schema.
    public static let permissionDenied = Code(rawValue: "permissionDenied")
    /// Another connection (another process, the sqlite3 shell, a `psql` session) held the
    /// write lock longer than the store's timeout (``SessionStore/FileOptions/busyTimeout``,
    /// or a server backend's lock timeout); nothing was written. Try again.
    public static let busy = Code(rawValue: "busy")

    // MARK: SQLite files only

    /// The file is not a SQLite database (or is empty, or is a directory).
    public static let notADatabase = Code(rawValue: "notADatabase")
    /// `schema_migrations`, `PRAGMA user_version` and the tables present disagree (a row
    /// deleted or renumbered, `user_version` or the ledger table changed by hand). The
    /// message names all three and ends with the SQL that repairs the file.
    public static let inconsistentMigrations = Code(rawValue: "inconsistentMigrations")
    /// The path is longer than SQLite opens (504 bytes on Linux, as an absolute path with
    /// symbolic links resolved; a new file needs a little less) or than the system allows.
    /// The message gives both lengths; use a path in a directory with a shorter one.
    public static let pathTooLong = Code(rawValue: "pathTooLong")
    /// The database is corrupt.
    public static let corrupt = Code(rawValue: "corrupt")
    /// The disk or the database's page limit is full.
    public static let full = Code(rawValue: "full")
    /// The file was replaced or deleted while the store had it open; open it again.
    public static let fileReplaced = Code(rawValue: "fileReplaced")
    /// The target of ``SessionFile/backup(to:overwrite:)`` exists, and overwriting it was
    /// not asked for (or its `-wal` holds commits, its `-journal` a transaction); or a `-wal`,
    /// `-shm` or `-journal` left from another database sits beside the path of a backup or a
    /// new store, which SQLite would pair with the new file. Nothing was written.
    public static let fileExists = Code(rawValue: "fileExists")
    /// A backup failed its verification: a new copy (nothing is left at the target), or the
    /// file given to ``SessionFile/restore(from:)`` (the store was not changed). The message
    /// names what failed: a verification of ``SessionStore/check()``, a pending migration,
    /// or a page size or text encoding that differs.
    public static let invalidBackup = Code(rawValue: "invalidBackup")
    /// The file given to ``SessionFile/backup(to:overwrite:)`` or
    /// ``SessionFile/restore(from:)`` is one of the store's own: the database file, its
    /// `-wal`, `-shm` or `-journal` (whether it exists or not), or a name that leads to one of
    /// them through a symbolic link or a hard link. Nothing was touched.
    public static let storeFile = Code(rawValue: "storeFile")
    /// The target of ``SessionFile/backup(to:overwrite:)`` exists and is not a regular file
    /// (a device such as `/dev/full`, a FIFO, a socket, a directory); it is never replaced,
    /// also with `overwrite`. Nothing was written.
    public static let notARegularFile = Code(rawValue: "notARegularFile")
    /// Any other SQLite or operating-system failure.
    public static let sqlite = Code(rawValue: "sqlite")
  }

  /// What kind of failure this is.
  public var code: Code
  /// A sentence for a person: what failed and why.
  public var message: String
  /// The database file involved, when there is one; for a server's store, its URL with
  /// any password replaced by `***`.
  public var path: String?
  /// SQLite's extended result code, when SQLite reported the failure.
  public var resultCode: Int32?
  /// The SQL that failed, when there was one.
  public var sql: String?

  /// Creates an error; the library creates these, tests may too.
  public init(
    _ code: Code, _ message: String, path: String? = nil, resultCode: Int32? = nil, sql: String? = nil
  ) {
    self.code = code
    self.message = message
    self.path = path
    self.resultCode = resultCode
    self.sql = sql
  }

  /// Throws `invalidArgument` unless `count` is 0 or more.
  package static func requireNonNegative(_ count: Int, _ name: String) throws {
    guard count >= 0 else {
      throw SessionStorageError(.invalidArgument, "\(name) must be 0 or more, not \(count)")
    }
  }

  /// Throws `invalidArgument` unless `age` is from zero to ``Retention/maximumAge``, the
  /// ages whose cutoff SQLite's date functions can compute; `name` names it in the message.
  package static func requireAge(_ age: Duration, _ name: String) throws {
    guard age >= .zero else {
      throw SessionStorageError(.invalidArgument, "\(name) must be 0 or more, not \(age)")
    }
    guard age <= Retention.maximumAge else {
      throw SessionStorageError(
        .invalidArgument,
        "\(name) must be at most \(Retention.format(Retention.maximumAge)) (the span from 0000-01-01 to "
          + "1970-01-01: further back than that, SQLite's date functions cannot count), not "
          + Retention.format(age))
    }
  }

  /// Whether SQLite could not open or create a file beside the database: `SQLITE_CANTOPEN`
  /// (any extended code), or `SQLITE_READONLY_DIRECTORY` (1544), which a user who owns the
  /// database but cannot write its directory gets when the `-wal` and `-shm` are missing.
  var cannotCreateFiles: Bool { resultCode.map { $0 & 0xff == 14 || $0 == 1544 } ?? false }

  /// `PATH: MESSAGE (SQLite code N)`, the way the CLI prints it.
  public var description: String {
    var text = path.map { "\($0): \(message)" } ?? message
    if let resultCode { text += " (SQLite code \(resultCode))" }
    return text
  }
}

extension SessionStorageError.Code {
  /// Whether `error` is a ``SessionStorageError`` with this code, so that a code is a `catch`
  /// pattern: `catch SessionStorageError.Code.invalidUsername { … }`.
  public static func ~= (code: Self, error: any Error) -> Bool {
    (error as? SessionStorageError)?.code == code
  }
}

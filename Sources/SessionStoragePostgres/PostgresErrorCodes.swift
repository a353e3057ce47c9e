import SessionStorage

extension SessionStorageError.Code {
  /// The PostgreSQL server cannot be reached, or the connection to it was lost: the
  /// server is down, starting up or shutting down, has no connection slot left, the host
  /// name does not resolve, the connection timed out. The message says whether anything
  /// was written (a write whose commit was sent but not confirmed says that its outcome is
  /// unknown). Try again later; a server that turns the login away is ``refused`` instead.
  public static let unavailable = Self(rawValue: "unavailable")
  /// The PostgreSQL server refused the connection for a reason that waiting does not cure:
  /// the database or the role does not exist, the role may not log in (`NOLOGIN`, no
  /// `CONNECT` privilege, no `pg_hba.conf` entry), the password is missing or wrong, SSL is
  /// required and the server offers none, or its certificate is not trusted. Unlike
  /// ``unavailable``, subscriptions end with it: fix the URL, the role or the server first.
  public static let refused = Self(rawValue: "refused")
  /// Any other error the PostgreSQL server reported; the message carries the server's
  /// words and its SQLSTATE.
  public static let postgres = Self(rawValue: "postgres")
  /// PostgreSQL's client library, libpq, cannot be loaded: it is not installed (the
  /// package `libpq5` on Debian and Ubuntu, `libpq` with Homebrew), or it is older than
  /// version 14. It is loaded when the first PostgreSQL store is opened; the message names
  /// the library, the loader's reason and what to install.
  public static let libraryMissing = Self(rawValue: "libraryMissing")
}

/// sessionctl's exit statuses (documented in `sessionctl --help` and the README).
enum ExitCode: Int32, Sendable {
  /// Done.
  case success = 0
  /// Any other failure: a refused or unreadable file, a failed check, an I/O error.
  case failure = 1
  /// The command line is wrong (sysexits `EX_USAGE`).
  case usage = 64
  /// A value is wrong: a username, a cursor, a count (sysexits `EX_DATAERR`).
  case invalidInput = 65
  /// The cursor asked for was compacted away; the message names the oldest one kept.
  case cursorCompacted = 66
  /// The history changed under `watch`, or `--since CURSOR@TIME` names a change that a
  /// restore replaced: take a new snapshot.
  case historyRewritten = 67
  /// The PostgreSQL server cannot be reached, or the connection was lost (sysexits
  /// `EX_UNAVAILABLE`): worth retrying later, unlike a refusal.
  case unavailable = 69
  /// The result could not be written: standard output is on a full disk, closed, or (for
  /// every command but `watch`) a pipe whose reader went away (sysexits `EX_IOERR`). A
  /// change the command committed stays committed; the message says so.
  case outputFailed = 74
  /// The PostgreSQL server refused the connection for a reason that waiting does not cure
  /// (sysexits `EX_NOPERM`): a missing database or role, a role that may not log in, a
  /// missing or wrong password, SSL required but not offered.
  case refused = 77
  /// `watch` stopped by SIGINT (128 + 2).
  case interrupted = 130
  /// `watch` stopped by SIGTERM (128 + 15).
  case terminated = 143
}

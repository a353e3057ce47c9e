import FeedKit
import Foundation

/// Turns rows of `session_changes` into entries, decoding a column again only when its
/// bytes differ from the value decoded last: consecutive entries mostly share their origin
/// and usernames, and an entry's `old_updated_at` is the time of the entry before it. A
/// page of 100 entries thus parses about 100 times instead of 200 and makes almost no
/// `String`; a write's entry reuses the previous write's. The values are the ones decoding
/// every column would give.
struct EntryDecoder {
  private var origin = RecentText()
  private var username = RecentText()
  private var time = RecentTime()

  /// The entry in the current row of a statement selecting ``SessionTables/changeColumns``.
  mutating func entry(_ statement: Statement) -> SessionEntry {
    // Read in the order in which values repeat: the previous row's new username and time
    // are this row's old ones, and its old username is mostly its new one.
    let before = SessionState(
      username: username.decode(statement.utf8(at: 3)), isLoggedIn: statement.int64(at: 5) != 0,
      updatedAt: time.decode(statement.utf8(at: 7)))
    let newUsername = username.decode(statement.utf8(at: 4))
    let at = time.decode(statement.utf8(at: 1))
    let after = SessionState(username: newUsername, isLoggedIn: statement.int64(at: 6) != 0, updatedAt: at)
    return SessionEntry(
      cursor: Cursor(statement.int64(at: 0)), time: at,
      origin: origin.decode(statement.utf8(at: 2)) ?? "external",
      change: SessionChange(before: before, after: after))
  }
}

extension EntryDecoder {
  /// The state in the current row of a statement selecting `username, is_logged_in,
  /// updated_at` from `session` (``SessionTables/stateSQL``): read again and again, it
  /// mostly repeats the last one.
  mutating func state(_ statement: Statement) -> SessionState {
    SessionState(
      username: username.decode(statement.utf8(at: 0)), isLoggedIn: statement.int64(at: 1) != 0,
      updatedAt: time.decode(statement.utf8(at: 2)))
  }
}

/// The text decoded last from some column (invalid UTF-8 replaced by U+FFFD, as
/// ``Statement/lossyText(at:)`` reads it), given again while the bytes are the same.
struct RecentText {
  private var last: String?

  /// The bytes as text, or nil for NULL.
  mutating func decode(_ bytes: UnsafeBufferPointer<UInt8>?) -> String? {
    guard let bytes else { return nil }
    // A repaired text's bytes differ from the column's, so it is decoded every time.
    if let last, last.utf8.withContiguousStorageIfAvailable({ sameBytes($0, bytes) }) == true {
      return last
    }
    let text = String(decoding: bytes, as: UTF8.self)
    last = text
    return text
  }
}

/// The time parsed last from some column (``SessionTables/date(_:)``), given again while
/// the bytes are the same.
struct RecentTime {
  /// The 24 bytes of the time parsed last (the feed's format), as three words.
  private var bytes: (UInt64, UInt64, UInt64) = (0, 0, 0)
  /// What they parse to (24 NUL bytes, the initial value, parse to the epoch too).
  private var last = Date(timeIntervalSince1970: 0)

  /// The stored time, the epoch for text not in the feed's format.
  mutating func decode(_ text: UnsafeBufferPointer<UInt8>?) -> Date {
    guard let text, text.count == 24, let base = text.baseAddress else { return SessionTables.date(text) }
    let raw = UnsafeRawPointer(base)
    let words = (
      raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
      raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
    )
    if words == bytes { return last }
    bytes = words
    last = SessionTables.date(text)
    return last
  }
}

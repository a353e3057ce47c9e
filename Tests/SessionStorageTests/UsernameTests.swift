import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The username rules on a real store: names that could pass for another (invisible,
/// reordering and blank characters, code points with no meaning yet, oversized characters)
/// are refused before anything is written; names of every script, with accents and emoji,
/// are stored as typed (in NFC).
@Suite(.timeLimit(.minutes(10))) struct UsernameTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  /// A family of three (man, woman, girl): 5 code points, 18 UTF-8 bytes, one character.
  static let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"

  /// A code point Swift accepts in no string literal (`\u{FDD0}` is refused at compile time).
  static func scalar(_ value: UInt32) -> String { Unicode.Scalar(value).map { String($0) } ?? "" }

  static let zeroWidthJoiner = "(allowed only between two emoji, or after a virama and before a letter)"
  static let variationSelector = "(allowed only after a symbol whose emoji or text style it selects)"
  static let tag = "(tag characters are allowed only in a subdivision flag such as England's)"

  /// Each name, and the reason it is refused.
  static let deceptive: [(String, String)] = [
    ("\u{200B}", "it contains the invisible format character U+200B (ZERO WIDTH SPACE) at position 1"),
    ("alice\u{200B}", "it contains the invisible format character U+200B (ZERO WIDTH SPACE) at position 6"),
    (
      "\u{FEFF}alice",
      "it contains the invisible format character U+FEFF (ZERO WIDTH NO-BREAK SPACE) at position 1"
    ),
    ("so\u{AD}phie", "it contains the invisible format character U+00AD (SOFT HYPHEN) at position 3"),
    ("a\u{2060}b", "it contains the invisible format character U+2060 (WORD JOINER) at position 2"),
    (
      "admin\u{202E}txt.exe",
      "it contains the bidirectional control character U+202E (RIGHT-TO-LEFT OVERRIDE) at position 6"
    ),
    (
      "alice\u{2066}bob",
      "it contains the bidirectional control character U+2066 (LEFT-TO-RIGHT ISOLATE) at position 6"
    ),
    (
      "x\u{200F}", "it contains the bidirectional control character U+200F (RIGHT-TO-LEFT MARK) at position 2"
    ),
    (
      "مرحبا\u{61C}",
      "it contains the bidirectional control character U+061C (ARABIC LETTER MARK) at position 6"
    ),
    (
      "al\u{200D}ice",
      "it contains the invisible format character U+200D (ZERO WIDTH JOINER) at position 3 " + zeroWidthJoiner
    ),
    (
      "👩\u{200D}",
      "it contains the invisible format character U+200D (ZERO WIDTH JOINER) at position 2 " + zeroWidthJoiner
    ),
    (
      "1\u{200D}2",
      "it contains the invisible format character U+200D (ZERO WIDTH JOINER) at position 2 " + zeroWidthJoiner
    ),
    (
      "ab\u{200C}c",
      "it contains the invisible format character U+200C (ZERO WIDTH NON-JOINER) at position 3 "
        + "(allowed only after a virama and before a letter)"
    ),
    (
      "alice\u{E0041}",
      "it contains the invisible format character U+E0041 (TAG LATIN CAPITAL LETTER A) at position 6 "
        + tag
    ),
    (
      "🏴\u{E0067}\u{E0062}",
      "it contains the invisible format character U+E0067 (TAG LATIN SMALL LETTER G) at position 2 "
        + tag
    ),
    (
      "alice\u{FE0F}",
      "it contains the invisible character U+FE0F (VARIATION SELECTOR-16) at position 6 "
        + variationSelector
    ),
    (
      "😀\u{FE0F}",
      "it contains the invisible character U+FE0F (VARIATION SELECTOR-16) at position 2 "
        + variationSelector
    ),
    (
      "7\u{FE0F}",
      "it contains the invisible character U+FE0F (VARIATION SELECTOR-16) at position 2 "
        + variationSelector
    ),
    ("\u{3164}", "it contains the invisible character U+3164 (HANGUL FILLER) at position 1"),
    ("a\u{34F}b", "it contains the invisible character U+034F (COMBINING GRAPHEME JOINER) at position 2"),
    ("葛\u{E0100}", "it contains the invisible character U+E0100 (VARIATION SELECTOR-17) at position 2"),
    (
      "alice\u{A0}bob",
      "it contains the space character U+00A0 (NO-BREAK SPACE) at position 6 "
        + "(only the ordinary space U+0020 is allowed)"
    ),
    (
      "ali\u{200A}ce",
      "it contains the space character U+200A (HAIR SPACE) at position 4 (only the ordinary space U+0020 is allowed)"
    ),
    ("\u{2800}", "it contains the blank character U+2800 (BRAILLE PATTERN BLANK) at position 1"),
    ("a\u{378}", "it contains the unassigned code point U+0378 at position 2"),
    ("a\u{FFFE}", "it contains the noncharacter U+FFFE at position 2"),
    ("a" + scalar(0xFDD0), "it contains the noncharacter U+FDD0 at position 2"),
    ("a\u{E000}", "it contains the private-use character U+E000 at position 2"),
    ("a\u{10FFFD}", "it contains the private-use character U+10FFFD at position 2"),
    (
      "a\u{FFFD}b",
      "it contains U+FFFD (REPLACEMENT CHARACTER) at position 2, the mark of text that was not valid UTF-8"
    ),
    (
      "a" + String(repeating: "\u{301}", count: 5_000),
      "character 1 is made of 5000 code points (at most 32 per character)"
    ),
    (
      "ok " + "q" + String(repeating: "\u{301}", count: 32),
      "character 4 is made of 33 code points (at most 32 per character)"
    ),
    (String(repeating: family, count: 100), "it is longer than 1024 bytes in UTF-8 (1800)"),
  ]

  @Test(arguments: deceptive)
  func deceptiveUsernamesAreRefusedAndChangeNothing(_ name: String, _ reason: String) async throws {
    try await store.logIn(as: "alice")
    let before = try store.state
    let head = try store.bounds().head
    for attempt in [{ try store.blocking.logIn(as: name) }, { try store.blocking.rename(to: name) }] {
      let error = try #require(throws: SessionStorageError.self) { try attempt() }
      #expect(error.code == .invalidUsername)
      #expect(error.message == "invalid username: " + reason)
    }
    #expect(try store.state == before)
    #expect(try store.bounds().head == head)
    #expect(try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM session_changes") == "1\n")
  }

  static let valid: [String] = [
    "José", "Zoë Ødegård", "Nguyễn", "Ελένη", "Дмитрий", "مرحبا", "محمد علی", "שָׁלוֹם", "नमस्ते", "क्षत्रिय",
    "\u{DC1}\u{DCA}\u{200D}\u{DBB}\u{DD3}",  // Sinhala "Sri": a zero width joiner after the virama
    "สวัสดี", "東京太郎", "김민준", "O'Brien-Smith", "Ⅻ", "👍", "\u{1F469}\u{200D}\u{1F4BB}", family,
    "\u{1F469}\u{1F3FD}\u{200D}\u{1F680}", "\u{2764}\u{FE0F}\u{200D}\u{1F525}",
    "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}", "\u{1F3F4}\u{200D}\u{2620}\u{FE0F}",
    "\u{1F441}\u{FE0F}\u{200D}\u{1F5E8}\u{FE0F}", "🇫🇷🇯🇵",
    "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",  // England's flag
    "#\u{FE0F}\u{20E3}1\u{FE0F}\u{20E3}", "\u{2764}\u{FE0F} bob", "\u{263A}\u{FE0E}", "\u{231A}\u{FE0E}",
    "q" + String(repeating: "\u{301}", count: 31), String(repeating: "👍", count: 256),
    String(repeating: "日", count: 256),
  ]

  @Test(arguments: valid)
  func usernamesOfEveryScriptAndEmojiAreAccepted(_ name: String) throws {
    let entry = try #require(try store.blocking.logIn(as: name))
    #expect(entry.after.username == name.precomposedStringWithCanonicalMapping)
    #expect(try store.state.username == name.precomposedStringWithCanonicalMapping)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
  }

  @Test func aDecomposedNameOfManyMarksIsMeasuredAfterNFC() throws {
    // 33 code points as typed, 32 once "e" and the first grave accent compose into "è".
    let name = "e" + String(repeating: "\u{300}", count: 32)
    #expect(name.unicodeScalars.count == 33)
    #expect(try Username.validated(name).unicodeScalars.count == 32)
  }

  @Test func aDeceptiveNameStoredByTheShellIsReportedByCheck() async throws {
    try await store.logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'alice' || char(8203)")
    #expect(try store.state.username == "alice\u{200B}")
    let username = try #require(try store.check().first { $0.check == .username })
    #expect(username.verdict == .failed)
    #expect(
      username.detail
        == "stored invalid username: it contains the invisible format character U+200B (ZERO WIDTH SPACE) at position 6"
    )
  }

  @Test func printableASCIIIsReturnedAsIs() throws {
    let every = String(decoding: (0x21...0x7E).map { UInt8($0) }, as: UTF8.self)
    #expect(try Username.validated(every) == every)
    #expect(try Username.validated("a b") == "a b")
  }
}

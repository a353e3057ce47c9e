import Foundation

/// The rules a username must meet before anything is written.
///
/// The rules are those of RFC 8265's UsernameCasePreserved profile (PRECIS) where a
/// username could pass for another or hide text, plus limits on size. Unlike that profile,
/// spaces, punctuation, symbols and emoji are allowed, so `🧑‍💻 dev` is a username.
///
/// A username:
/// - is non-empty, has no leading or trailing whitespace, and is stored in Unicode NFC, so
///   "José" typed with a composed or a decomposed "é" names one user;
/// - has at most ``maximumLength`` characters (grapheme clusters), at most
///   ``maximumUTF8Count`` bytes in UTF-8, and at most ``maximumScalarsPerCharacter`` code
///   points in one character, all counted after NFC ("a" followed by 5,000 accents is one
///   character of 10 KB, and is refused);
/// - has no control character (C0, DEL, C1 such as U+0085, U+2028, U+2029): no newline,
///   no terminal escape sequence;
/// - has no invisible or reordering character: no format character (Unicode category Cf:
///   the zero-width space U+200B, the byte-order mark U+FEFF, the soft hyphen U+00AD, the
///   word joiner U+2060, the bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E
///   and U+2066–U+2069, tags…), no default-ignorable code point (U+3164 HANGUL FILLER,
///   U+034F COMBINING GRAPHEME JOINER, variation selectors…), no space other than U+0020
///   (no U+00A0 NO-BREAK SPACE, no U+200A HAIR SPACE) and no U+2800 BRAILLE PATTERN BLANK;
///   so `admin\u{202E}txt.exe` (shown as `adminexe.txt`) and `alice\u{200B}` (shown as
///   `alice`) are refused;
/// - has no code point without a meaning: none unassigned (in the Unicode version of the
///   Swift runtime), no noncharacter (U+FFFE, U+FDD0…), no private-use code point, and no
///   U+FFFD REPLACEMENT CHARACTER (the mark of text that was not valid UTF-8).
///
/// Emoji need three of those invisible code points, and keep them where they belong:
/// - U+200D ZERO WIDTH JOINER between two emoji (`👩‍💻`, `👨‍👩‍👧`, `🏳️‍🌈`; the first may
///   carry a skin tone or U+FE0F), and, as RFC 5892 allows, after a virama and before a
///   letter (Sinhala `ශ්‍රී`). U+200C ZERO WIDTH NON-JOINER only after a virama and before a
///   letter (RFC 5892's other context, in Arabic script, is not recognized);
/// - U+FE0F VARIATION SELECTOR-16 right after a symbol that is shown as text unless it
///   follows (`❤️`), U+FE0E VARIATION SELECTOR-15 right after an emoji (`☺︎`), and either
///   after `0`–`9`, `#` or `*` followed by U+20E3 (keycap `1️⃣`); a selector that would
///   change nothing (`😀` + U+FE0F) is refused;
/// - tag characters only in a subdivision flag: U+1F3F4, 3 to 7 tag letters or digits,
///   then U+E007F CANCEL TAG (England's, Scotland's and Wales's flags).
///
/// Flags made of two regional indicators (`🇫🇷`), skin tones, and letters and marks of
/// every script (Greek, Cyrillic, Arabic, Hebrew, Devanagari, Thai, CJK, Hangul…) need no
/// exception. Printable ASCII without a space at either end meets every rule.
///
/// The error names the rule broken, the code point with its Unicode name, and its
/// position (counting code points from 1, as typed): `invalid username: it contains the
/// invisible format character U+200B (ZERO WIDTH SPACE) at position 6`.
public enum Username {
  /// The most characters (grapheme clusters, after NFC) a username may have.
  public static let maximumLength = 256

  /// The most bytes a username may take in UTF-8, after NFC.
  public static let maximumUTF8Count = 1_024

  /// The most code points one character (grapheme cluster) of a username may have, after
  /// NFC. The longest emoji (a couple with skin tones) has 10.
  public static let maximumScalarsPerCharacter = 32

  /// The username in NFC when it meets every rule.
  /// - Throws: ``SessionStorageError`` with code `invalidUsername` naming the rule broken.
  public static func validated(_ raw: String) throws -> String {
    func refuse(_ reason: String) -> SessionStorageError {
      SessionStorageError(.invalidUsername, "invalid username: \(reason)")
    }
    guard !raw.isEmpty else { throw refuse("it is empty") }
    // Printable ASCII without a space at either end meets every rule and is already NFC,
    // one character per byte: skip the Unicode work, the common case on every login.
    if raw.utf8.count <= maximumLength, raw.utf8.first != 0x20, raw.utf8.last != 0x20,
      raw.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
    {
      return raw
    }
    // Bound the work on huge inputs before normalizing them.
    guard raw.utf8.count <= maximumLength * 64 else {
      throw refuse("it is longer than \(maximumLength) characters (\(raw.utf8.count) bytes)")
    }
    let scalars = Array(raw.unicodeScalars)
    for index in scalars.indices {
      if let violation = violation(at: index, in: scalars) {
        throw refuse("it contains \(violation.what) at position \(index + 1)\(violation.note)")
      }
    }
    if let first = scalars.first, let last = scalars.last,
      first.properties.isWhitespace || last.properties.isWhitespace
    {
      throw refuse(
        scalars.allSatisfy(\.properties.isWhitespace)
          ? "it is only whitespace" : "it has leading or trailing whitespace")
    }
    let normalized = raw.precomposedStringWithCanonicalMapping
    for (offset, character) in normalized.enumerated()
    where character.unicodeScalars.count > maximumScalarsPerCharacter {
      throw refuse(
        "character \(offset + 1) is made of \(character.unicodeScalars.count) code points "
          + "(at most \(maximumScalarsPerCharacter) per character)")
    }
    guard normalized.count <= maximumLength else {
      throw refuse("it is longer than \(maximumLength) characters (\(normalized.count))")
    }
    guard normalized.utf8.count <= maximumUTF8Count else {
      throw refuse("it is longer than \(maximumUTF8Count) bytes in UTF-8 (\(normalized.utf8.count))")
    }
    return normalized
  }
}

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The rules a username must meet before anything is written.
///
/// RFC 8265's UsernameCasePreserved profile (PRECIS) wherever a name could pass for another
/// or hide text, with spaces, punctuation, symbols and emoji allowed (`🧑‍💻 dev`): stored in
/// NFC; no control, format, default-ignorable, unassigned, noncharacter or private-use code
/// point, except the joiners, variation selectors and tags emoji need where they need them;
/// bounded in characters, bytes and code points per character. The article "Using the
/// store" lists each rule.
/// The error names the rule broken, the code point and its position: `invalid username: it
/// contains the invisible format character U+200B (ZERO WIDTH SPACE) at position 6`.
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
    #if canImport(FoundationEssentials)
      // NFC, as Foundation's `precomposedStringWithCanonicalMapping` (absent from
      // FoundationEssentials) composes it: normalization is stable across Unicode versions.
      let normalized = String(decoding: raw._nfcCodeUnits, as: UTF8.self)
    #else
      let normalized = raw.precomposedStringWithCanonicalMapping
    #endif
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

extension Username {
  /// A code point a username may not contain where it stands: what it is (`the invisible
  /// format character U+200B (ZERO WIDTH SPACE)`) and, when it is allowed elsewhere, where
  /// (` (allowed only …)`), to follow its position in the message.
  struct Violation: Equatable {
    var what: String
    var note = ""
  }

  /// Why `scalars[index]` may not stand where it is, or nil when it may. Looks at its
  /// neighbours for the joiners, variation selectors and tags that emoji need.
  static func violation(at index: Int, in scalars: [Unicode.Scalar]) -> Violation? {
    let scalar = scalars[index]
    if (0x20...0x7E).contains(scalar.value) { return nil }
    let properties = scalar.properties
    switch properties.generalCategory {
    case .control, .lineSeparator, .paragraphSeparator:
      return Violation(what: "the control character \(describe(scalar))")
    case .format:
      if properties.isBidiControl {
        return Violation(what: "the bidirectional control character \(describe(scalar))")
      }
      let invisible = "the invisible format character \(describe(scalar))"
      switch scalar.value {
      case 0x200D:
        if joinsEmoji(at: index, in: scalars) || followsVirama(at: index, in: scalars) { return nil }
        return Violation(
          what: invisible, note: " (allowed only between two emoji, or after a virama and before a letter)")
      case 0x200C:
        if followsVirama(at: index, in: scalars) { return nil }
        return Violation(what: invisible, note: " (allowed only after a virama and before a letter)")
      case 0xE0020...0xE007F:
        if isInSubdivisionFlag(at: index, in: scalars) { return nil }
        return Violation(
          what: invisible, note: " (tag characters are allowed only in a subdivision flag such as England's)")
      default:
        return Violation(what: invisible)
      }
    case .privateUse:
      return Violation(what: "the private-use character \(describe(scalar))")
    case .surrogate:
      return Violation(what: "the surrogate code point \(describe(scalar))")
    case .unassigned:
      return Violation(
        what: properties.isNoncharacterCodePoint
          ? "the noncharacter \(describe(scalar))" : "the unassigned code point \(describe(scalar))")
    case .spaceSeparator:
      return Violation(
        what: "the space character \(describe(scalar))", note: " (only the ordinary space U+0020 is allowed)")
    default:
      break
    }
    if properties.isDefaultIgnorableCodePoint {
      if scalar.value == 0xFE0E || scalar.value == 0xFE0F {
        if selectsStyle(at: index, in: scalars) { return nil }
        return Violation(
          what: "the invisible character \(describe(scalar))",
          note: " (allowed only after a symbol whose emoji or text style it selects)")
      }
      return Violation(what: "the invisible character \(describe(scalar))")
    }
    switch scalar.value {
    case 0x2800: return Violation(what: "the blank character \(describe(scalar))")
    case 0xFFFD:
      return Violation(what: describe(scalar), note: ", the mark of text that was not valid UTF-8")
    default: return nil
    }
  }

  /// `U+200B (ZERO WIDTH SPACE)`, or `U+0378` for a code point without a name.
  static func describe(_ scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16, uppercase: true)
    let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    guard let name = scalar.properties.name else { return code }
    return "\(code) (\(name))"
  }

  /// An emoji that can take part in a ZWJ sequence or a variation sequence: an emoji that
  /// is not a digit, `#` or `*`, a regional indicator, or a skin tone.
  private static func isPictographic(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.isEmoji && !scalar.isASCII && !(0x1F1E6...0x1F1FF).contains(scalar.value)
      && !scalar.properties.isEmojiModifier
  }

  /// A zero width joiner between two emoji; the first may carry skin tones and U+FE0F.
  private static func joinsEmoji(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
    guard index + 1 < scalars.count, isPictographic(scalars[index + 1]) else { return false }
    var base = index - 1
    while base >= 0, scalars[base].value == 0xFE0F || scalars[base].properties.isEmojiModifier { base -= 1 }
    return base >= 0 && isPictographic(scalars[base])
  }

  /// A joiner or non-joiner right after a virama and right before a letter (RFC 5892,
  /// appendix A.1 and A.2, with the letter after it so that it cannot end a name unseen).
  private static func followsVirama(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
    guard index > 0, index + 1 < scalars.count,
      scalars[index - 1].properties.canonicalCombiningClass == .virama
    else { return false }
    switch scalars[index + 1].properties.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
    default: return false
    }
  }

  /// U+FE0E right after an emoji, U+FE0F right after an emoji that is shown as text without
  /// it; either after `0`–`9`, `#` or `*` when U+20E3 (keycap) follows.
  private static func selectsStyle(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
    guard index > 0 else { return false }
    let base = scalars[index - 1]
    if base.isASCII {
      return base.properties.isEmoji && index + 1 < scalars.count && scalars[index + 1].value == 0x20E3
    }
    return isPictographic(base) && (scalars[index].value == 0xFE0E || !base.properties.isEmojiPresentation)
  }

  /// A tag character inside U+1F3F4 WAVING BLACK FLAG, 3 to 7 tag letters or digits, and
  /// U+E007F CANCEL TAG (Unicode Technical Standard #51's subdivision flags).
  private static func isInSubdivisionFlag(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
    func isTag(_ scalar: Unicode.Scalar) -> Bool { (0xE0020...0xE007F).contains(scalar.value) }
    func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
      (0xE0030...0xE0039).contains(scalar.value) || (0xE0061...0xE007A).contains(scalar.value)
    }
    var start = index
    while start > 0, isTag(scalars[start - 1]) { start -= 1 }
    guard start > 0, scalars[start - 1].value == 0x1F3F4 else { return false }
    var end = start
    while end < scalars.count, isLetterOrDigit(scalars[end]) { end += 1 }
    return end < scalars.count && scalars[end].value == 0xE007F && (3...7).contains(end - start)
      && index <= end
  }
}

extension Unicode.Scalar {
  /// Whether `sessionctl` writes this code point as an escape (`\u0085` in JSON, `\u{85}` for
  /// people) rather than raw: control characters (C0, DEL, C1), U+2028 and U+2029, and every
  /// format character (Unicode category Cf: bidirectional controls that would reorder the
  /// line on a terminal, zero-width spaces, the byte-order mark, the soft hyphen, tags) but
  /// U+200D ZERO WIDTH JOINER, which emoji such as 👩‍💻 need and which moves nothing.
  /// Valid usernames contain none of them (a ZWJ only between emoji, tags only in a
  /// subdivision flag, which is shown escaped); a `sqlite3` edit can store any.
  package var isEscapedInOutput: Bool {
    if (0x20..<0x7F).contains(value) { return false }
    switch properties.generalCategory {
    case .control, .lineSeparator, .paragraphSeparator: return true
    case .format: return value != 0x200D
    default: return false
    }
  }
}

extension String {
  /// The text safe for a terminal: every scalar of ``Unicode/Scalar/isEscapedInOutput`` as a
  /// `\u{1B}`-style escape; the rest as it is.
  package var escapedForTerminal: String {
    var output = ""
    for scalar in unicodeScalars {
      if scalar.isEscapedInOutput {
        output += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      } else {
        output.unicodeScalars.append(scalar)
      }
    }
    return output
  }
}

extension Optional<String> {
  /// ``Swift/String/escapedForTerminal``, or `(none)` for nil.
  package var escapedForTerminal: String { self?.escapedForTerminal ?? "(none)" }
}

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

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

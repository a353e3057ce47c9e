extension JSONValue {
  /// The value as compact JSON text on one line: no spaces, no newline (RFC 8259).
  var encoded: String {
    var output = ""
    encode(into: &output)
    return output
  }

  private func encode(into output: inout String) {
    switch self {
    case .null: output += "null"
    case .bool(let value): output += value ? "true" : "false"
    case .int(let value): output += String(value)
    case .string(let value): Self.encode(string: value, into: &output)
    case .array(let elements):
      output += "["
      for (index, element) in elements.enumerated() {
        if index > 0 { output += "," }
        element.encode(into: &output)
      }
      output += "]"
    case .object(let members):
      output += "{"
      for (index, member) in members.enumerated() {
        if index > 0 { output += "," }
        Self.encode(string: member.key, into: &output)
        output += ":"
        member.value.encode(into: &output)
      }
      output += "}"
    }
  }

  /// A quoted string: `"` and `\` escaped, control characters (C0, DEL and C1) as `\n`-style
  /// or `\u00XX` escapes, U+2028/U+2029 escaped so the line is also valid JavaScript, and
  /// format characters but U+200D (bidirectional controls such as U+202E, zero-width spaces,
  /// tags) as `\uXXXX` (a surrogate pair above U+FFFF), so a terminal showing the line
  /// cannot be made to reorder or hide part of it. Everything else is written as UTF-8.
  static func encode(string: String, into output: inout String) {
    output += "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": output += "\\\""
      case "\\": output += "\\\\"
      case "\n": output += "\\n"
      case "\r": output += "\\r"
      case "\t": output += "\\t"
      case "\u{08}": output += "\\b"
      case "\u{0C}": output += "\\f"
      case _ where scalar.isEscapedInOutput:
        UTF16.encode(scalar) { unit in
          let hex = String(unit, radix: 16, uppercase: false)
          output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
      default: output.unicodeScalars.append(scalar)
      }
    }
    output += "\""
  }
}

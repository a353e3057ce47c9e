import Foundation

/// The rules a username must meet before anything is written.
///
/// A username is non-empty, at most ``maximumLength`` characters, has no control
/// characters (NUL, newlines and escape sequences included) and no leading or trailing
/// whitespace. It is stored in Unicode NFC, so composed and decomposed spellings name the
/// same user.
public enum Username {
  /// The most characters (grapheme clusters, after NFC) a username may have.
  public static let maximumLength = 256

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
    for (offset, scalar) in raw.unicodeScalars.enumerated() {
      switch scalar.properties.generalCategory {
      case .control, .lineSeparator, .paragraphSeparator:
        let code = String(scalar.value, radix: 16, uppercase: true)
        throw refuse(
          "it contains the control character U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code) at position \(offset + 1)"
        )
      default: continue
      }
    }
    if let first = raw.unicodeScalars.first, let last = raw.unicodeScalars.last,
      first.properties.isWhitespace || last.properties.isWhitespace
    {
      throw refuse(
        raw.unicodeScalars.allSatisfy(\.properties.isWhitespace)
          ? "it is only whitespace" : "it has leading or trailing whitespace")
    }
    let normalized = raw.precomposedStringWithCanonicalMapping
    guard normalized.count <= maximumLength else {
      throw refuse("it is longer than \(maximumLength) characters (\(normalized.count))")
    }
    return normalized
  }
}

internal import SystemKit

/// Finds the secrets in a connection string the way libpq reads it, byte by byte, so that
/// none is printed (``redacted(_:)``, ``scrubbed(_:quoting:)``) or handed to a child process
/// (``withoutPasswords(_:)``). The secrets are libpq's two hidden settings, `password` and
/// `sslpassword` (the passphrase of the client key).
///
/// libpq parses bytes, not characters: a combining mark or any other character that extends
/// the one before it does not hide a `:`, `@`, `/`, `?`, `&` or `=` from it, so none hides one
/// here (the text is never split into grapheme clusters).
///
/// - The URL form, `postgresql://` or `postgres://` (or any `scheme://`, shown in the error
///   that refuses it): libpq takes the user part up to the first `@` that comes before any
///   `/`, and the password after its first `:`; so a raw `?`, `#`, `:`, `&`, `=` or any other
///   character but `@` and `/` belongs to the password (`postgresql://app:Tr0ub?dor@host/db`).
///   A raw `@` or `/`, which libpq cannot read there, is covered too: when a later `@` is
///   followed by what looks like a host, everything from the user's `:` to that `@` counts as
///   the password. In the query (after the first `?` past the user part), a `password` or
///   `sslpassword` parameter (its name percent-decoded) is a secret, and so are the pieces
///   after it without `=` (a raw `&` in it).
/// - The key/value form (`host=h password='a b' dbname=d`): the value of `password` and
///   `sslpassword`, unquoted to the next ASCII space or single-quoted with `\` escapes.
package enum PostgresPasswords {
  /// The settings libpq hides (its `*` display flag): their values are secrets.
  static let secretKeys: Set<[UInt8]> = [Array("password".utf8), Array("sslpassword".utf8)]

  /// `text` with every secret in it replaced by `***`.
  static func redacted(_ text: String) -> String { rewrite(text, strip: false) }

  /// `text` without its secrets (the user part's `:password`, the `password` and
  /// `sslpassword` parameters), for a child process: libpq then takes the password from
  /// `~/.pgpass` or `PGPASSFILE`.
  package static func withoutPasswords(_ text: String) -> String { rewrite(text, strip: true) }

  /// Whether `text` holds a secret.
  package static func containsPassword(_ text: String) -> Bool { !secrets(in: text).isEmpty }

  /// `message` (libpq's own, which may quote the whole connection string or a piece of it)
  /// with `conninfo` replaced by its redacted form and every secret of `conninfo` — as
  /// written, percent-decoded, and each `&`-separated piece of it — replaced by `***`.
  static func scrubbed(_ message: String, quoting conninfo: String) -> String {
    var bytes = replacing(Array(conninfo.utf8), with: Array(redacted(conninfo).utf8), in: Array(message.utf8))
    // Longest first, so that a secret that holds another is replaced whole.
    for secret in secrets(in: conninfo).sorted(by: { $0.count > $1.count }) {
      bytes = replacing(secret, with: Array("***".utf8), in: bytes)
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Where the query of a URL begins (the byte after its `?`), as libpq reads it: after the
  /// first `?` past the user part (which ends at the first `@` before any `/`); nil when
  /// there is none.
  static func queryStart(in url: [UInt8]) -> Int? {
    guard let scheme = firstRange(of: Array("://".utf8), in: url) else {
      return url.firstIndex(of: UInt8(ascii: "?")).map { $0 + 1 }
    }
    var rest = scheme.upperBound
    if let end = url[rest...].firstIndex(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "/") }),
      url[end] == UInt8(ascii: "@")
    {
      rest = end + 1
    }
    return url[rest...].firstIndex(of: UInt8(ascii: "?")).map { $0 + 1 }
  }

  // MARK: Finding the secrets

  /// A secret's place in the text: its bytes, and the bytes a rewrite removes with it (the
  /// `:` before a user part's password, a whole `password=…` parameter).
  private struct Secret {
    /// The secret's value, as written.
    var value: Range<Int>
    /// What ``withoutPasswords(_:)`` removes.
    var whole: Range<Int>
    /// Whether `whole` is a query parameter (its `&` goes with it when stripped).
    var isParameter: Bool
  }

  /// The secrets of `text` as written, percent-decoded, and (for a value holding a raw `&`)
  /// each of its pieces: what a message of libpq may quote.
  private static func secrets(in text: String) -> [[UInt8]] {
    let bytes = Array(text.utf8)
    var found: [[UInt8]] = []
    for secret in locate(bytes) where !secret.value.isEmpty {
      let value = Array(bytes[secret.value])
      for piece in [value] + value.split(separator: UInt8(ascii: "&")).map(Array.init) where !piece.isEmpty {
        found.append(piece)
        if let decoded = String.percentDecoded(piece), decoded != piece, !decoded.isEmpty {
          found.append(decoded)
        }
      }
    }
    return found
  }

  /// Where the secrets of `bytes` are, in order.
  private static func locate(_ bytes: [UInt8]) -> [Secret] {
    if let start = urlStart(bytes) { return locateInURL(bytes, from: start) }
    return locateInKeyValues(bytes) ?? []
  }

  /// The byte after `scheme://`, for any URL (a mistyped scheme is shown too).
  private static func urlStart(_ bytes: [UInt8]) -> Int? {
    guard let scheme = firstRange(of: Array("://".utf8), in: bytes), scheme.lowerBound > 0,
      bytes[..<scheme.lowerBound].allSatisfy({ isASCIIAlphanumeric($0) || "+-.".utf8.contains($0) })
    else { return nil }
    return scheme.upperBound
  }

  private static func locateInURL(_ bytes: [UInt8], from start: Int) -> [Secret] {
    let at = UInt8(ascii: "@")
    let slash = UInt8(ascii: "/")
    let question = UInt8(ascii: "?")
    let equals = UInt8(ascii: "=")
    let ampersand = UInt8(ascii: "&")
    // libpq: the user part ends at the first '@' that comes before any '/'.
    var userEnd: Int?
    var index = start
    while index < bytes.count, bytes[index] != at, bytes[index] != slash { index += 1 }
    if index < bytes.count, bytes[index] == at { userEnd = index }
    // A raw '@' or '/' in the password: the last '@' followed by a host.
    if let last = bytes.lastIndex(of: at), last >= start, last > (userEnd ?? -1) {
      let host = bytes[(last + 1)...].prefix { $0 != slash && $0 != question }
      let before = bytes[start..<last]
      if !host.contains(equals), !host.contains(ampersand), before.contains(UInt8(ascii: ":")),
        !before.contains(question)
      {
        userEnd = last
      }
    }
    var secrets: [Secret] = []
    var rest = start
    if let userEnd {
      if let colon = bytes[start..<userEnd].firstIndex(of: UInt8(ascii: ":")), colon + 1 < userEnd {
        secrets.append(Secret(value: (colon + 1)..<userEnd, whole: colon..<userEnd, isParameter: false))
      }
      rest = userEnd
    }
    guard let query = bytes[rest...].firstIndex(of: question) else { return secrets }
    var inSecret = false
    var pieceStart = query + 1
    while pieceStart <= bytes.count {
      let pieceEnd = bytes[pieceStart...].firstIndex(of: ampersand) ?? bytes.count
      let piece = pieceStart..<pieceEnd
      let key = bytes[piece].firstIndex(of: equals)
      if inSecret, key == nil, var last = secrets.popLast() {
        // A raw '&' of the secret: the piece is the secret's too.
        last.value = last.value.lowerBound..<pieceEnd
        last.whole = last.whole.lowerBound..<pieceEnd
        secrets.append(last)
      } else if let key, let name = String.percentDecoded(Array(bytes[pieceStart..<key])),
        secretKeys.contains(name)
      {
        secrets.append(Secret(value: (key + 1)..<pieceEnd, whole: piece, isParameter: true))
        inSecret = true
      } else {
        inSecret = false
      }
      pieceStart = pieceEnd + 1
    }
    return secrets
  }

  /// The secrets of the key/value form; nil when `bytes` is not one.
  private static func locateInKeyValues(_ bytes: [UInt8]) -> [Secret]? {
    var secrets: [Secret] = []
    var index = 0
    func skipSpaces() { while index < bytes.count, isSpace(bytes[index]) { index += 1 } }
    while true {
      let spaceStart = index
      skipSpaces()
      guard index < bytes.count else { return secrets }
      let keyStart = index
      while index < bytes.count, bytes[index] != UInt8(ascii: "="), !isSpace(bytes[index]) { index += 1 }
      let key = Array(bytes[keyStart..<index])
      skipSpaces()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "="), !key.isEmpty else { return nil }
      index += 1
      skipSpaces()
      let valueStart = index
      if index < bytes.count, bytes[index] == UInt8(ascii: "'") {
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "'") {
          index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard index < bytes.count else { return nil }
        index += 1
      } else {
        while index < bytes.count, !isSpace(bytes[index]) {
          index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index = min(index, bytes.count)
      }
      if secretKeys.contains(key) {
        secrets.append(Secret(value: valueStart..<index, whole: spaceStart..<index, isParameter: false))
      }
    }
  }

  // MARK: Rewriting

  private static func rewrite(_ text: String, strip: Bool) -> String {
    let bytes = Array(text.utf8)
    let secrets = locate(bytes)
    guard !secrets.isEmpty else { return text }
    var output: [UInt8] = []
    var copied = 0
    for secret in secrets {
      let cut = strip ? secret.whole : secret.value
      output += bytes[copied..<cut.lowerBound]
      if !strip { output += Array("***".utf8) }
      copied = cut.upperBound
    }
    output += bytes[copied...]
    guard strip else { return String(decoding: output, as: UTF8.self) }
    return String(decoding: tidiedQuery(output, secrets: secrets, in: bytes), as: UTF8.self)
  }

  /// A stripped text's query without the empty pieces the removed parameters left (`?&a`,
  /// `a&&b`, a lone `?`), and the key/value form without leading or trailing spaces.
  private static func tidiedQuery(_ stripped: [UInt8], secrets: [Secret], in bytes: [UInt8]) -> [UInt8] {
    guard urlStart(bytes) != nil else {
      return Array(stripped.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
    guard secrets.contains(where: \.isParameter), let query = queryStart(in: stripped) else {
      return stripped
    }
    let pieces = stripped[query...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
    let kept = Array(pieces.joined(separator: [UInt8(ascii: "&")]))
    return Array(stripped[..<(kept.isEmpty ? query - 1 : query)]) + kept
  }

  // MARK: Bytes

  /// libpq's `isspace` in the C locale.
  private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }

  private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
      || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
  }

  /// The first occurrence of `needle` in `haystack`.
  static func firstRange(of needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Range<Int>? {
    guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else {
      return nil
    }
    for index in start...(haystack.count - needle.count)
    where haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) {
      return index..<(index + needle.count)
    }
    return nil
  }

  /// `haystack` with every occurrence of `needle` replaced by `replacement`.
  private static func replacing(_ needle: [UInt8], with replacement: [UInt8], in haystack: [UInt8]) -> [UInt8]
  {
    var output: [UInt8] = []
    var copied = 0
    while let found = firstRange(of: needle, in: haystack, from: copied) {
      output += haystack[copied..<found.lowerBound] + replacement
      copied = found.upperBound
    }
    return output + haystack[copied...]
  }
}

internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Finds the passwords in a connection string the way libpq reads it, so that none is
/// printed (``redacted(_:)``) or handed to a child process (``withoutPasswords(_:)``).
///
/// - The URL form, `postgresql://` or `postgres://` (or any `scheme://`, shown in the error
///   that refuses it): libpq takes the user part up to the
///   first `@` that comes before any `/`, and the password after its first `:`; so a raw
///   `?`, `#`, `:`, `&`, `=` or any other character but `@` and `/` belongs to the password
///   (`postgresql://app:Tr0ub?dor@host/db`). A raw `@` or `/`, which libpq cannot read there,
///   is covered too: when a later `@` is followed by what looks like a host, everything from
///   the user's `:` to that `@` counts as the password. In the query (after the first `?`
///   past the user part), a `password` parameter (its name percent-decoded) is a password,
///   and so are the pieces after it without `=` (a raw `&` in it).
/// - The key/value form (`host=h password='a b' dbname=d`): the value of `password`,
///   unquoted to the next space or single-quoted with `\` escapes.
enum PostgresPasswords {
  /// `text` with every password in it replaced by `***`.
  static func redacted(_ text: String) -> String { rewrite(text, strip: false) }

  /// `text` without its passwords (the user part's `:password`, the `password` parameters),
  /// for a child process: libpq then takes the password from `~/.pgpass` or `PGPASSFILE`.
  static func withoutPasswords(_ text: String) -> String { rewrite(text, strip: true) }

  /// Whether `text` holds a password.
  static func containsPassword(_ text: String) -> Bool { redacted(text) != text }

  /// Where the query of a URL begins, as libpq reads it: the first `?` after the user part
  /// (which ends at the first `@` before any `/`); nil when there is none.
  static func queryStart(in url: String) -> String.Index? {
    guard let scheme = url.rangeAsFoundationFinds("://") else { return url.firstIndex(of: "?") }
    var rest = url[scheme.upperBound...]
    if let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@" {
      rest = rest[rest.index(after: end)...]
    }
    return rest.firstIndex(of: "?")
  }

  private static func rewrite(_ text: String, strip: Bool) -> String {
    // Any URL (a mistyped scheme is shown too), else the key/value form.
    if let scheme = text.rangeAsFoundationFinds("://"), !text[..<scheme.lowerBound].isEmpty,
      text[..<scheme.lowerBound].allSatisfy({
        $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0))
      })
    {
      return rewriteURL(
        Array(text), from: text.distance(from: text.startIndex, to: scheme.upperBound), strip: strip)
    }
    return rewriteKeyValues(text, strip: strip)
  }

  private static func rewriteURL(_ characters: [Character], from start: Int, strip: Bool) -> String {
    let count = characters.count
    // libpq: the user part ends at the first '@' that comes before any '/'.
    var userEnd: Int?
    var index = start
    while index < count, characters[index] != "@", characters[index] != "/" { index += 1 }
    if index < count, characters[index] == "@" { userEnd = index }
    // A raw '@' or '/' in the password: the last '@' followed by a host.
    if let last = characters.lastIndex(of: "@"), last >= start, last > (userEnd ?? -1) {
      let host = characters[(last + 1)...].prefix { $0 != "/" && $0 != "?" }
      let before = characters[start..<last]
      if !host.contains("="), !host.contains("&"), before.contains(":"), !before.contains("?") {
        userEnd = last
      }
    }
    var output: [Character] = Array(characters[..<start])
    var rest = start
    if let userEnd, let colon = characters[start..<userEnd].firstIndex(of: ":"), colon + 1 < userEnd {
      output += characters[start..<(strip ? colon : colon + 1)]
      if !strip { output += "***" }
      rest = userEnd
    }
    guard let question = characters[rest...].firstIndex(of: "?") else {
      return String(output + characters[rest...])
    }
    output += characters[rest...question]
    let pieces = characters[(question + 1)...].split(separator: "&", omittingEmptySubsequences: false)
    var kept: [String] = []
    var inPassword = false
    for piece in pieces {
      let key = piece.prefix { $0 != "=" }
      if inPassword, key.count == piece.count { continue }  // a raw '&' of the password
      inPassword = false
      guard key.count < piece.count, (String(key).percentDecoded ?? String(key)) == "password" else {
        kept.append(String(piece))
        continue
      }
      inPassword = true
      if !strip { kept.append(String(key) + "=***") }
    }
    let query = kept.joined(separator: "&")
    // Nothing left after the '?': drop it.
    return String(output.dropLast(query.isEmpty && strip ? 1 : 0)) + query
  }

  /// The key/value form; `text` as it is when it is not one.
  private static func rewriteKeyValues(_ text: String, strip: Bool) -> String {
    let characters = Array(text)
    var output = ""
    var index = 0
    var changed = false
    func skipSpaces() { while index < characters.count, characters[index].isWhitespace { index += 1 } }
    while true {
      let spaceStart = index
      skipSpaces()
      guard index < characters.count else {
        output += String(characters[spaceStart..<index])
        break
      }
      let keyStart = index
      while index < characters.count, characters[index] != "=", !characters[index].isWhitespace { index += 1 }
      let key = String(characters[keyStart..<index])
      skipSpaces()
      guard index < characters.count, characters[index] == "=", !key.isEmpty else { return text }
      index += 1
      skipSpaces()
      let valueStart = index
      if index < characters.count, characters[index] == "'" {
        index += 1
        while index < characters.count, characters[index] != "'" {
          index += characters[index] == "\\" ? 2 : 1
        }
        guard index < characters.count else { return text }
        index += 1
      } else {
        while index < characters.count, !characters[index].isWhitespace {
          index += characters[index] == "\\" ? 2 : 1
        }
        index = min(index, characters.count)
      }
      if key == "password" {
        changed = true
        if !strip { output += String(characters[spaceStart..<valueStart]) + "***" }
      } else {
        output += String(characters[spaceStart..<index])
      }
    }
    guard changed else { return text }
    return strip ? output.trimmingWhitespace() : output
  }
}

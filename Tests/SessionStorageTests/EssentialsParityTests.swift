import Foundation
import SystemKit
import Testing

@testable import SessionStorage

/// What the shipped modules use instead of Foundation API that FoundationEssentials lacks
/// gives what Foundation gives (this test imports Foundation to compare).
@Suite struct EssentialsParityTests {
  static let texts = [
    "", " ", "plain", "  both ends\t", "\t\u{3000}ideographic\u{00A0}", "\u{2028}line\u{2029}",
    "\n\r\u{85}newlines\u{0B}\u{0C}\n", " \u{200B}zero width\u{200B} ", "e\u{301} \u{301}", "👩‍👩‍👧 x 🇫🇷 ",
    "\u{1680}\u{2000}\u{200A}\u{202F}\u{205F}ogham", "a\u{0}b\u{0} ", "   ", "\u{180E}mongolian\u{FEFF}",
  ]

  @Test(arguments: texts)
  func trimmingMatchesFoundation(_ text: String) {
    #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
    #expect(text.trimmingWhitespace(newlines: true) == text.trimmingCharacters(in: .whitespacesAndNewlines))
    let substring = text.dropFirst(0)
    #expect(substring.trimmingWhitespace() == substring.trimmingCharacters(in: .whitespaces))
  }

  @Test(arguments: [
    ("postgresql://u@h/db", "://"), ("no scheme", "://"), ("$$ body $$", "$$"), ("a$$", "$$"),
    ("e\u{301}x", "e"), ("x'\u{301}y", "'"), ("ERROR:  42P01: no", ":  "), ("", "x"), ("abc", ""),
    ("aaab", "aab"), ("e\u{301}", "\u{301}"), ("a\u{301}bc", "bc"),
    ("a\r\nCREATE FUNCTION x", "\nCREATE FUNCTION "), ("a\r\nb", "\r"), ("a$$\u{FE0F}b", "$$"),
    ("a$$\u{200D}b", "$$"), ("a$$\u{1F3FB}", "$$"), ("a$$\u{903}", "$$"), ("a$$\u{1B35}", "$$"),
    ("a$$\u{FF9E}", "$$"), ("a$$\u{200C}", "$$"), ("x$$\u{301}$$", "$$"),
  ])
  func rangeMatchesFoundation(_ text: String, _ target: String) {
    func offsets(_ range: Range<String.Index>?) -> [Int]? {
      range.map {
        [
          text.utf8.distance(from: text.startIndex, to: $0.lowerBound),
          text.utf8.distance(from: text.startIndex, to: $0.upperBound),
        ]
      }
    }
    #expect(offsets(text.rangeAsFoundationFinds(target)) == offsets(text.range(of: target)))
  }

  @Test(arguments: [
    "a%20b", "a%2", "a%zz", "%C3%A9", "%C3", "%ff", "a%%", "ab%2F", "%e9", "x%4a", "plain", "",
    "%", "%%41", "p%61ssword",
  ])
  func percentDecodingMatchesFoundation(_ text: String) {
    #expect(text.percentDecoded == text.removingPercentEncoding)
  }

  @Test(arguments: [
    "/tmp/a b/é%?#;:[]", ":", "a:b/c:d", "a b:c/x:y", "./a:b", "//a:b", ":x", "", "/plain/path.db",
    "relative/x~_-.!$&'()*+,=@", "\u{1F600}\t\n\\\"<>{}|^`",
  ])
  func percentEncodingMatchesFoundation(_ path: String) {
    #expect(
      Connection.percentEncodedPath(path)
        == path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed))
  }

  @Test(arguments: [
    ("it's", "'", "''"), ("x'\u{301}y", "'", "''"), ("\"a\"\"b\"", "\"\"", "\""), ("", "'", "''"),
    ("aaa", "aa", "b"), ("e\u{301}", "e", "E"), ("ab", "", "x"), ("é", "e\u{301}", "E"),
  ])
  func replacingMatchesFoundation(_ text: String, _ target: String, _ replacement: String) {
    #expect(
      text.replacingOccurrences(of: target, with: replacement)
        == NSString(string: text).replacingOccurrences(of: target, with: replacement))
  }

  @Test(arguments: [
    "e\u{301}", "\u{212B}ngstr\u{F6}m", "A\u{30A}\u{323}", "\u{1100}\u{1161}\u{11A8}", "\u{FB01}le",
    "e\u{301} x",
  ])
  func usernamesNormalizeAsFoundationDoes(_ text: String) throws {
    #expect(
      Array(try Username.validated(text).unicodeScalars)
        == Array(text.precomposedStringWithCanonicalMapping.unicodeScalars))
  }
}

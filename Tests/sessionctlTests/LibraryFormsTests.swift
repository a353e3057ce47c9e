import Foundation
import SessionStorage
import Testing

@testable import sessionctl

/// The library's `Codable` conformances and descriptions are sessionctl's lines: one
/// definition of each shape, checked against the examples of the README and of the article
/// "The sessionctl command line".
@Suite struct LibraryFormsTests {
  /// The README and the article: every JSON change and snapshot line they show, and each
  /// change's text line.
  static let examples: String = [
    "../../README.md", "../../Sources/SessionStorage/Documentation.docc/CommandLine.md",
  ]
  .map { path in
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(path)
    return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
  }.joined(separator: "\n")

  static func jsonLines(_ type: String) -> [String] {
    examples.split(separator: "\n").map(String.init).filter { $0.hasPrefix(#"{"type":"\#(type)""#) }
  }

  @Test func theDocumentationShowsLinesOfEachKind() {
    #expect(Self.jsonLines("change").count >= 3)
    #expect(Self.jsonLines("snapshot").count >= 1)
  }

  @Test(arguments: jsonLines("change"))
  func aChangeLineDecodesAndEncodesBackExactly(_ line: String) throws {
    let entry = try JSONDecoder().decode(SessionEntry.self, from: Data(line.utf8))
    #expect(try JSONValue(encoding: entry).encoded == line, "sessionctl's encoder")
    #expect(
      try Self.object(JSONEncoder().encode(entry)) == Self.object(Data(line.utf8)), "Foundation's encoder")
    // The human line shown for the same cursor and time, where it shows one.
    let text = entry.description
    let shown = Self.examples.split(separator: "\n").map(String.init).filter {
      $0.hasPrefix("\(entry.cursor)  \(Timestamp.format(entry.time))")
    }
    for line in shown { #expect(line.hasPrefix(text), "\(line) vs \(text)") }
  }

  @Test(arguments: jsonLines("snapshot"))
  func aSnapshotLineDecodesAndEncodesBackExactly(_ line: String) throws {
    let snapshot = try JSONDecoder().decode(SessionSnapshot.self, from: Data(line.utf8))
    #expect(try JSONValue(encoding: snapshot).encoded == line)
    #expect(try Self.object(JSONEncoder().encode(snapshot)) == Self.object(Data(line.utf8)))
    #expect(snapshot.description.hasPrefix("snapshot at \(snapshot.cursor): "))
  }

  @Test func aLineOfAnotherTypeOrWithWrongEventsIsRefused() throws {
    let line = try #require(Self.jsonLines("change").first)
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(SessionSnapshot.self, from: Data(line.utf8))
    }
    let lying = line.replacingOccurrences(
      of: #""events":["#, with: #""events":[{"type":"loggedIn","username":"x"},"#)
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(SessionEntry.self, from: Data(lying.utf8))
    }
  }

  @Test func escapedCharactersRoundTrip() throws {
    let state = SessionState(
      username: "a\u{202E}b\u{85}\"", isLoggedIn: true, updatedAt: Date(timeIntervalSince1970: 1))
    let line = try JSONValue(encoding: state).encoded
    #expect(
      line == #"{"username":"a\u202eb\u0085\"","isLoggedIn":true,"updatedAt":"1970-01-01T00:00:01.000Z"}"#)
    #expect(try JSONDecoder().decode(SessionState.self, from: Data(line.utf8)) == state)
    #expect(state.description == #"a\u{202E}b\u{85}", logged in, updated 1970-01-01T00:00:01.000Z"#)
  }

  @Test func cursorsPrintParseAndEncodeAsTheirNumber() throws {
    #expect(Cursor("42") == Cursor(42))
    #expect(Cursor(42).description == "42")
    #expect(try JSONValue(encoding: Cursor(42)).encoded == "42")
    #expect(try JSONDecoder().decode(Cursor.self, from: Data("42".utf8)) == Cursor(42))
  }

  static func object(_ data: Data) throws -> NSDictionary {
    try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary)
  }
}

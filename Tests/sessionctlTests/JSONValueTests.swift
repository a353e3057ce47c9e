import FeedKit
import Foundation
import Testing

@testable import SessionStorage
@testable import sessionctl

@Suite struct JSONValueTests {
  @Test(arguments: [
    ("plain", #""plain""#), ("", #""""#), ("quote \" here", #""quote \" here""#),
    (#"back\slash"#, #""back\\slash""#),
    ("line\nbreak", #""line\nbreak""#), ("tab\there", #""tab\there""#), ("cr\r", #""cr\r""#),
    ("\u{08}\u{0C}", #""\b\f""#), ("nul\u{00}", #""nul\u0000""#), ("esc\u{1B}[31m", #""esc\u001b[31m""#),
    ("\u{1F}\u{7F}", #""\u001f\u007f""#), ("sep\u{2028}\u{2029}", #""sep\u2028\u2029""#),
    ("é 日本 👩‍💻", "\"é 日本 👩‍💻\""), ("/slash", #""/slash""#),
    ("nel\u{85}", #""nel\u0085""#), ("\u{80}\u{9F}", #""\u0080\u009f""#), ("csi\u{9B}2J", #""csi\u009b2J""#),
    ("admin\u{202E}txt.exe", #""admin\u202etxt.exe""#), ("\u{2066}a\u{2069}", #""\u2066a\u2069""#),
    ("\u{200E}\u{200F}\u{61C}", #""\u200e\u200f\u061c""#), ("zw\u{200B}\u{FEFF}", #""zw\u200b\ufeff""#),
    ("soft\u{AD}hyphen", #""soft\u00adhyphen""#), ("tag\u{E0041}", #""tag\udb40\udc41""#),
    ("\u{1F469}\u{200D}\u{1F4BB}\u{2764}\u{FE0F}", "\"\u{1F469}\u{200D}\u{1F4BB}\u{2764}\u{FE0F}\""),
  ])
  func stringEscaping(_ text: String, _ expected: String) throws {
    let encoded = JSONValue.string(text).encoded
    #expect(encoded == expected)
    // Foundation's parser reads it back to the same string.
    let decoded = try JSONSerialization.jsonObject(with: Data("[\(encoded)]".utf8)) as? [String]
    #expect(decoded == [text])
  }

  @Test func everyControlCharacterIsEscaped() {
    for value in 0..<0x20 {
      let text = String(UnicodeScalar(UInt8(value)))
      let encoded = JSONValue.string(text).encoded
      #expect(encoded.unicodeScalars.allSatisfy { $0.value >= 0x20 }, "U+\(value) came out raw")
    }
  }

  @Test func everyC1AndFormatCharacterIsEscapedButTheZeroWidthJoiner() {
    for value in UInt32(0x7F)...0x10FFFF {
      guard let scalar = Unicode.Scalar(value) else { continue }
      let category = scalar.properties.generalCategory
      guard
        category == .control || category == .format || category == .lineSeparator
          || category == .paragraphSeparator
      else { continue }
      let encoded = JSONValue.string(String(scalar)).encoded
      if scalar == "\u{200D}" {
        #expect(encoded == "\"\u{200D}\"")
      } else {
        #expect(
          encoded.unicodeScalars.allSatisfy { $0.isASCII }, "U+\(String(value, radix: 16)) came out raw")
      }
    }
  }

  @Test func scalarsAndContainers() {
    let value: JSONValue = [
      "null": nil, "true": true, "false": false, "int": 42, "negative": .int(-7), "max": .int(.max),
      "array": [1, "two", [], [:]], "object": ["nested": ["deeper": nil]],
    ]
    #expect(
      value.encoded
        == #"{"null":null,"true":true,"false":false,"int":42,"negative":-7,"max":9223372036854775807,"#
        + #""array":[1,"two",[],{}],"object":{"nested":{"deeper":null}}}"#)
  }

  @Test func keysKeepTheirOrderAndAreEscaped() {
    let value: JSONValue = ["z": 1, "a": 2, "we\"ird": 3]
    #expect(value.encoded == #"{"z":1,"a":2,"we\"ird":3}"#)
  }

  @Test func optionalStrings() {
    #expect(JSONValue.string(nil as String?).encoded == "null")
    #expect(JSONValue.string("x" as String?).encoded == #""x""#)
  }
}

@Suite struct PresenterTests {
  static let time = Date(timeIntervalSince1970: 1_780_000_000.689)
  static let before = SessionState(
    username: nil, isLoggedIn: false, updatedAt: Date(timeIntervalSince1970: 0))
  static let after = SessionState(username: "alice", isLoggedIn: true, updatedAt: time)
  static let entry = SessionEntry(
    cursor: Cursor(7), time: time, origin: "sessionctl",
    change: SessionChange(
      account: AccountID(1), before: before, after: after, wasActive: false, isActive: true))

  @Test func changeLine() throws {
    #expect(
      Presenter(json: true).change(Self.entry)
        == #"{"type":"change","cursor":7,"at":"2026-05-28T20:26:40.689Z","origin":"sessionctl","account":1,"#
        + #""events":[{"type":"added","username":"alice"},{"type":"loggedIn","username":"alice"},"#
        + #"{"type":"activated","username":"alice"}],"#
        + #""before":{"username":null,"isLoggedIn":false,"updatedAt":"1970-01-01T00:00:00.000Z"},"#
        + #""after":{"username":"alice","isLoggedIn":true,"updatedAt":"2026-05-28T20:26:40.689Z"},"#
        + #""wasActive":false,"isActive":true}"#)
    #expect(
      Presenter(json: false).change(Self.entry)
        == "7  2026-05-28T20:26:40.689Z  sessionctl  add alice, login alice, activate alice")
    #expect(
      Self.entry.description
        == "7  2026-05-28T20:26:40.689Z  sessionctl  add alice, login alice, activate alice")
  }

  @Test func eventsOfEveryKind() throws {
    let loggedOut = SessionEvent.loggedOut(username: "bob")
    #expect(loggedOut.json.encoded == #"{"type":"loggedOut","username":"bob"}"#)
    #expect(SessionEvent.loggedIn(username: nil).json.encoded == #"{"type":"loggedIn","username":null}"#)
    #expect(
      SessionEvent.usernameChanged(from: "a", to: nil).json.encoded
        == #"{"type":"usernameChanged","from":"a","to":null}"#)
    #expect(loggedOut.description == "logout bob")
  }

  @Test func snapshotAndStatus() throws {
    let snapshot = SessionSnapshot(state: Self.after, cursor: Cursor(7))
    #expect(
      Presenter(json: true).snapshot(snapshot)
        == #"{"type":"snapshot","cursor":7,"state":{"username":"alice","isLoggedIn":true,"#
        + #""updatedAt":"2026-05-28T20:26:40.689Z"}}"#)
    let alice = Account(
      id: AccountID(1), username: "alice", isLoggedIn: true, updatedAt: Self.time, cursor: Cursor(7))
    let bob = Account(
      id: AccountID(2), username: "bob", isLoggedIn: false, updatedAt: Self.time, cursor: Cursor(3))
    let roster = SessionRoster(
      accounts: [alice, bob], activeID: alice.id, activeSince: Self.time, cursor: Cursor(7))
    #expect(
      Presenter(json: true).status(roster, path: "x", greeting: "Hello, alice")
        == [
          #"{"username":"alice","isLoggedIn":true,"updatedAt":"2026-05-28T20:26:40.689Z","cursor":7,"active":1,"#
            + #""accounts":2}"#
        ])
    #expect(
      Presenter(json: false).status(roster, path: "/tmp/s.db", greeting: "Hello, alice") == [
        "greeting   Hello, alice", "active     alice", "logged in  yes",
        "updated    2026-05-28T20:26:40.689Z", "accounts   2", "cursor     7",
        "database   /tmp/s.db",
      ])
    let none = SessionRoster(accounts: [bob], activeID: nil, activeSince: Self.time, cursor: Cursor(9))
    #expect(
      Presenter(json: false).status(none, path: "/tmp/s.db", greeting: "Signed out")[1...4] == [
        "active     none", "logged in  no", "updated    2026-05-28T20:26:40.689Z", "accounts   1",
      ])
    #expect(
      Presenter(json: false).accounts(roster) == [
        "* alice  logged in   since 2026-05-28T20:26:40.689Z  id 1",
        "  bob    logged out  since 2026-05-28T20:26:40.689Z  id 2",
      ])
    #expect(Presenter(json: true).accounts(roster) == [roster.jsonLine])
    #expect(Presenter(json: false).accounts(none).count == 1)
    #expect(
      Presenter(json: false).accounts(
        SessionRoster(accounts: [], activeID: nil, activeSince: Self.time, cursor: .zero))
        == ["no accounts"])
  }

  @Test func historyIsAligned() {
    let other = SessionEntry(
      cursor: Cursor(12), time: Self.time, origin: "external",
      change: SessionChange(
        account: AccountID(1), before: Self.after,
        after: SessionState(username: "alice", isLoggedIn: false, updatedAt: Self.time), wasActive: true,
        isActive: true))
    #expect(
      [Self.entry, other].map { $0.line(cursorWidth: 2, originWidth: 10) } == [
        "7   2026-05-28T20:26:40.689Z  sessionctl  add alice, login alice, activate alice",
        "12  2026-05-28T20:26:40.689Z  external    logout alice",
      ])
  }

  @Test func terminalEscapesAreShownNotSent() {
    #expect(Presenter.display("evil\u{1B}[2J\nname") == "evil\\u{1B}[2J\\u{A}name")
    #expect(Presenter.display(nil) == "(none)")
  }

  @Test(arguments: [
    ("nel\u{85}", "nel\\u{85}"), ("csi\u{9B}2J", "csi\\u{9B}2J"),
    ("admin\u{202E}txt.exe", "admin\\u{202E}txt.exe"),
    ("\u{2066}a", "\\u{2066}a"), ("x\u{200F}\u{61C}", "x\\u{200F}\\u{61C}"),
    ("alice\u{200B}", "alice\\u{200B}"),
    ("\u{FEFF}bob", "\\u{FEFF}bob"), ("so\u{AD}phie", "so\\u{AD}phie"), ("tag\u{E0041}", "tag\\u{E0041}"),
    ("line\u{2028}", "line\\u{2028}"), ("\u{1F469}\u{200D}\u{1F4BB}", "\u{1F469}\u{200D}\u{1F4BB}"),
    ("José 日本 مرحبا", "José 日本 مرحبا"),
  ])
  func c1BidiAndFormatCharactersAreShownEscaped(_ text: String, _ shown: String) {
    #expect(Presenter.display(text) == shown)
  }

  @Test func checkDetailsAreShownEscaped() {
    let item = CheckResult(.state, .failed, detail: "session (a\u{202E}b) differs")
    #expect(Presenter(json: false).check([item]) == ["FAIL  state  session (a\\u{202E}b) differs"])
  }
}

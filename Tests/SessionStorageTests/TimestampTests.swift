import Foundation
import Testing

@testable import SessionStorage

@Suite struct TimestampTests {
  @Test(arguments: [
    (0.0, "1970-01-01T00:00:00.000Z"), (1_780_000_000.689, "2026-05-28T20:26:40.689Z"),
    (-0.001, "1969-12-31T23:59:59.999Z"), (951_782_400.5, "2000-02-29T00:00:00.500Z"),
    (253_402_300_799.999, "9999-12-31T23:59:59.999Z"),
  ])
  func formats(_ seconds: Double, _ expected: String) {
    #expect(Timestamp.format(Date(timeIntervalSince1970: seconds)) == expected)
  }

  @Test(arguments: [
    "1970-01-01T00:00:00.000Z", "2026-05-28T20:26:40.689Z", "1969-12-31T23:59:59.999Z",
    "2000-02-29T00:00:00.500Z",
  ])
  func parsingAndFormattingRoundTrip(_ text: String) throws {
    #expect(Timestamp.format(try #require(Timestamp.parse(text))) == text)
  }

  @Test(arguments: [
    "", "yesterday", "2026-13-01T00:00:00.000Z", "2026-01-01 00:00:00", "2026-01-01T00:00:00.000Zjunk",
    // A byte just below and just above the digits, in each field; a separator out of place.
    "2026-0/-01T00:00:00.000Z", "2026-01-0:T00:00:00.000Z", "2026-01-01T0/:00:00.000Z",
    "2026-01-01T00:00:00.00:Z", "/026-01-01T00:00:00Z", "2026-01-01T24:00:00.000Z",
    "2026-01-01T00-00:00.000Z",
    "2026-01-01T00:00:00.000z",
  ])
  func parsingRefusesOtherText(_ text: String) {
    #expect(Timestamp.parse(text) == nil)
  }

  @Test func roundsToTheNearestMillisecond() {
    // 0.689 is not exact in binary; truncating would print .688.
    let date = Date(timeIntervalSince1970: 1_780_000_000 + 689.0 / 1000)
    #expect(Timestamp.format(date).hasSuffix(".689Z"))
    #expect(Timestamp.format(Date(timeIntervalSince1970: 0.0004)) == "1970-01-01T00:00:00.000Z")
    #expect(Timestamp.format(Date(timeIntervalSince1970: 0.9996)) == "1970-01-01T00:00:01.000Z")
  }

  @Test(arguments: [
    0.0, 0.0004, 0.9996, -0.0015, 1_780_000_000.6894, 1_780_000_000.6895, 253_402_300_799.9991,
  ])
  func roundedIsTheTimeTheFileGivesBack(_ seconds: Double) throws {
    let date = Date(timeIntervalSince1970: seconds)
    let rounded = Timestamp.rounded(date)
    #expect(rounded == Timestamp.parse(Timestamp.format(date)))
    #expect(Timestamp.format(rounded) == Timestamp.format(date))
    #expect(Timestamp.rounded(rounded) == rounded)
  }

  /// SQLite's own `strftime` is the oracle: the times it writes for random instants from
  /// year 1 to 9999 are the ones `format` writes, and `parse` reads them back as `rounded`.
  @Test func formatWritesWhatSQLiteWritesAndParseReadsItBack() throws {
    let connection = try Connection(path: "", mode: .memory)
    defer { connection.close() }
    var random = SystemRandomNumberGenerator()
    for _ in 0..<2000 {
      let milliseconds = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &random)
      let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
      let sqlite = try #require(
        try connection.scalarText(
          "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ? / 1000.0, 'unixepoch')", [.integer(milliseconds)]))
      #expect(Timestamp.format(date) == sqlite, "\(milliseconds) ms")
      #expect(Timestamp.parse(sqlite) == Timestamp.rounded(date), "\(sqlite)")
    }
  }
}

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
}

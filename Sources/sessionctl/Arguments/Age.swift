import CommandLineKit
import SessionStorage

/// A duration as typed for `--max-age` and `--older-than`: a whole number ≥ 0 and one unit,
/// `s`, `m`, `h` or `d` (`90s`, `15m`, `12h`, `30d`), up to the library's
/// `Retention.maximumAge` (`719528d`), the oldest cutoff SQLite's date functions compute.
/// Nothing else: no sign, no fraction, no space, no other unit, no larger value.
struct Age: ExpressibleByArgument, Equatable {
  let duration: Duration

  init(_ duration: Duration) { self.duration = duration }

  static let expected =
    "a whole number and a unit: s, m, h or d (90s, 15m, 12h, 30d), at most "
    + Retention.format(Retention.maximumAge)

  init(argument: String) throws(InvalidValue) {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    guard let unit = argument.last, let seconds = units[unit] else {
      throw InvalidValue(expected: Self.expected, noun: "duration")
    }
    let digits = argument.dropLast()
    guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let count = Int64(digits),
      case (let total, let overflow) = count.multipliedReportingOverflow(by: seconds * 1000), !overflow,
      Duration.milliseconds(total) <= Retention.maximumAge
    else {
      throw InvalidValue(expected: Self.expected, noun: "duration")
    }
    duration = .milliseconds(total)
  }
}

import Foundation

/// Formats times as the feed stores them: ISO-8601 in UTC with milliseconds,
/// `2026-11-29T20:14:35.689Z`.
enum UTCTimestamp {
  /// `date` to the nearest millisecond. (Rounding, not truncating: a time read from the
  /// file went through a `Double` and must print as the text it was read from.)
  static func format(_ date: Date) -> String {
    let total = Int64((date.timeIntervalSince1970 * 1000).rounded())
    let milliseconds = floorModulo(total, 1000)
    let seconds = (total - milliseconds) / 1000
    let secondOfDay = floorModulo(seconds, 86_400)
    let (year, month, day) = civilDate(daysSinceEpoch: (seconds - secondOfDay) / 86_400)
    return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
      + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(milliseconds, 3))Z"
  }

  private static func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
    ((value % divisor) + divisor) % divisor
  }

  private static func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
  }

  /// The proleptic Gregorian date of a day count (Howard Hinnant's `civil_from_days`).
  private static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }
}

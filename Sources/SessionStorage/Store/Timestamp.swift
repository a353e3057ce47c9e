#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The feed's time format, ISO-8601 UTC with milliseconds (`2026-11-29T20:14:35.689Z`), as
/// SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ')` writes it. Parsed by hand: exactly this format,
/// no other ISO-8601 variant, whatever the locale.
package enum Timestamp {
  /// Now, formatted.
  static func now() -> String { format(Date()) }

  /// `date` formatted, to the nearest millisecond: a time read from the file went through
  /// a `Double`, and rounding prints it as the text it was read from.
  package static func format(_ date: Date) -> String {
    let (seconds, milliseconds) = millisecondParts(date)
    let days = (seconds - seconds.modulo(86_400)) / 86_400
    let secondOfDay = Int(seconds.modulo(86_400))
    let (year, month, day) = civil(fromDays: days)
    // Written digit by digit into the string's own storage: a write formats two times.
    return String(unsafeUninitializedCapacity: 32) { buffer in
      var end = 0
      func put(_ byte: UInt8) {
        buffer[end] = byte
        end += 1
      }
      /// `value` in decimal, zero-padded to `width` digits (more when it needs them).
      func put(_ value: Int, _ width: Int) {
        if value < 0 { put(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 1
        var scale: UInt = 1
        while magnitude / scale >= 10 {
          scale *= 10
          digits += 1
        }
        for _ in digits..<max(width, digits) { put(UInt8(ascii: "0")) }
        while scale > 0 {
          put(UInt8(ascii: "0") + UInt8(magnitude / scale))
          magnitude %= scale
          scale /= 10
        }
      }
      put(year, 4)
      put(UInt8(ascii: "-"))
      put(month, 2)
      put(UInt8(ascii: "-"))
      put(day, 2)
      put(UInt8(ascii: "T"))
      put(secondOfDay / 3600, 2)
      put(UInt8(ascii: ":"))
      put(secondOfDay / 60 % 60, 2)
      put(UInt8(ascii: ":"))
      put(secondOfDay % 60, 2)
      put(UInt8(ascii: "."))
      put(milliseconds, 3)
      put(UInt8(ascii: "Z"))
      return end
    }
  }

  /// `date` to the nearest millisecond, as the file keeps times: the very `Date` that
  /// ``parse(_:)`` returns for ``format(_:)``'s text of it. A store without a file
  /// (``SessionStore/inMemory(state:)``) rounds its times with it, so that both stores' times compare alike.
  package static func rounded(_ date: Date) -> Date {
    let (seconds, milliseconds) = millisecondParts(date)
    // The same arithmetic as `parse`, so that the two give equal values.
    return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000)
  }

  /// The whole seconds since 1970 (rounded down) and the milliseconds after them (0–999)
  /// of `date` rounded to the nearest millisecond.
  private static func millisecondParts(_ date: Date) -> (seconds: Int64, milliseconds: Int) {
    let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
    let milliseconds = Int(totalMilliseconds.modulo(1000))
    return ((totalMilliseconds - Int64(milliseconds)) / 1000, milliseconds)
  }

  /// A time read from a store: text not in the feed's format (typed by hand), or none,
  /// reads as the epoch, and `check` reports it. Every store reads its times through this
  /// or its byte form.
  package static func stored(_ text: String?) -> Date {
    text.flatMap(parse) ?? epoch
  }

  /// A time read from a store as UTF-8 bytes (SQLite's own buffer), read as
  /// `stored(_:)` reads its text, with no `String` made in between.
  static func stored(_ bytes: UnsafeBufferPointer<UInt8>?) -> Date {
    bytes.flatMap(parse) ?? epoch
  }

  private static let epoch = Date(timeIntervalSince1970: 0)

  /// Parses `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.mmmZ`; nil for anything else
  /// (e.g. typed by hand).
  package static func parse(_ text: String) -> Date? {
    // A native string's UTF-8 is contiguous: read in place, with no copy per time read (a
    // page of history reads two hundred).
    text.utf8.withContiguousStorageIfAvailable(parse) ?? Array(text.utf8).withUnsafeBufferPointer(parse)
  }

  /// Parses UTF-8 bytes in the same format as `parse(_:)` reads from a string.
  static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
    let fraction = bytes.count == 24
    guard fraction || bytes.count == 20, let base = bytes.baseAddress else { return nil }
    // Every digit is read whatever the others are, and checked once at the end: a page of
    // history reads two hundred times.
    var digits = true
    func number(_ start: Int, _ width: Int) -> Int {
      var value = 0
      for index in start..<start + width {
        let digit = base[index] &- UInt8(ascii: "0")
        digits = digits && digit < 10
        value = value &* 10 &+ Int(digit)
      }
      return value
    }
    let (year, month, day) = (number(0, 4), number(5, 2), number(8, 2))
    let (hour, minute, second) = (number(11, 2), number(14, 2), number(17, 2))
    let milliseconds = fraction ? number(20, 3) : 0
    guard digits, base[4] == UInt8(ascii: "-"), base[7] == UInt8(ascii: "-"), base[10] == UInt8(ascii: "T"),
      base[13] == UInt8(ascii: ":"), base[16] == UInt8(ascii: ":"),
      fraction
        ? base[19] == UInt8(ascii: ".") && base[23] == UInt8(ascii: "Z") : base[19] == UInt8(ascii: "Z"),
      (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
    else { return nil }
    let days = daysFromCivil(year: year, month: month, day: day)
    let seconds = Double(days * 86_400 + Int64(hour * 3600 + minute * 60 + second))
    return Date(timeIntervalSince1970: seconds + Double(milliseconds) / 1000)
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
    let y = Int64(month <= 2 ? year - 1 : year)
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = Int64((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1)
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  private static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
    let month = Int(mp < 10 ? mp + 3 : mp - 9)
    return (Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0), month, day)
  }
}

extension Int64 {
  /// The remainder that is never negative.
  fileprivate func modulo(_ divisor: Int64) -> Int64 { ((self % divisor) + divisor) % divisor }
}

import CommandLineKit
import SessionStorage

extension FeedStart: ExpressibleByArgument {
  /// Where `--since` resumes: `CURSOR`, or `CURSOR@TIME` with the time printed for that
  /// change, which is checked so that a rewritten history is not resumed silently.
  package init(argument: String) throws(InvalidValue) {
    guard let at = argument.firstIndex(of: "@") else {
      self = .after(try Cursor(argument: argument))
      return
    }
    let time = String(argument[argument.index(after: at)...])
    guard let cursor = Cursor(String(argument[..<at])), let date = Timestamp.parse(time) else {
      throw InvalidValue(
        expected: "a whole number ≥ 0, or one followed by @ and the time printed for that change "
          + "(e.g. 8@2026-11-29T20:33:36.562Z)",
        noun: "cursor")
    }
    self = .afterEntry(cursor, time: date)
  }
}

import FeedKit
import Foundation
import SessionStorage

/// What must hold after any run: checked through a fresh store, independent of the writers.
enum Verification {
  /// Problems found: SQLite integrity, migration records, state vs. newest change, cursor
  /// holes, and every acknowledged cursor present in the feed.
  static func problems(path: String, acknowledged: Set<Int64>) throws -> [String] {
    let store = try SessionStore(path: path, options: .init(origin: "verifier"))
    var problems = try store.check().filter { $0.verdict == .failed }.map { "\($0.check): \($0.detail)" }
    var kept = Set<Int64>()
    var start = FeedStart.beginning
    while true {
      let page = try store.history(from: start, limit: 1000)
      guard let last = page.last else { break }
      kept.formUnion(page.map(\.cursor.value))
      start = .after(last.cursor)
    }
    let lost = acknowledged.subtracting(kept)
    if !lost.isEmpty { problems.append("acknowledged but missing: \(lost.sorted().prefix(10))") }
    return problems
  }
}

import SessionStorage
import SessionViewModels

extension SessionCtl {
  /// How many changes `history` reads per query.
  static let historyPageSize = 256

  /// `status`: the state and head cursor, read in one transaction, and the greeting an
  /// app would show: the snapshot's state is injected into a `GreetingViewModel`, which
  /// needs nothing more than `SessionProviding`.
  func status(_ location: DatabaseLocation, _ presenter: Presenter) async throws -> ExitCode {
    let store = try openForReading(location)
    let snapshot = try store.snapshot()
    let greeting = await MainActor.run { GreetingViewModel(session: snapshot.state).greeting }
    try output.write(try presenter.status(snapshot, path: location.path, greeting: greeting))
    return .success
  }

  /// `history`: the changes after `since` (or from the oldest kept), page by page.
  func history(_ location: DatabaseLocation, _ presenter: Presenter, since: FeedStart?, limit: Int?)
    throws -> ExitCode
  {
    let store = try openForReading(location)
    let cursorWidth = try store.bounds().head.description.count
    var start = since ?? .beginning
    var remaining = limit ?? .max
    while remaining > 0 {
      let page = try store.history(from: start, limit: min(remaining, Self.historyPageSize))
      guard let last = page.last else { break }
      let originWidth = max(10, page.map { Presenter.display($0.origin).count }.max() ?? 0)
      for entry in page {
        try output.write(try presenter.change(entry, cursorWidth: cursorWidth, originWidth: originWidth))
      }
      remaining -= page.count
      start = .after(last.cursor)
    }
    return .success
  }

  /// `check`: every verification, then exit 1 if any failed.
  func check(_ location: DatabaseLocation, _ presenter: Presenter) throws -> ExitCode {
    let store = try openForReading(location)
    let items = try store.check()
    try output.write(presenter.check(items))
    let failures = items.filter { $0.verdict == .failed }.count
    guard failures == 0 else {
      fail("check found \(failures) \(failures == 1 ? "problem" : "problems") in \(location.path)")
      return .failure
    }
    return .success
  }
}

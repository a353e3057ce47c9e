import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl history`: the changes after `--since` (or from the oldest kept), page by page.
  struct History: SessionCommand {
    /// How many changes are read per query.
    static let pageSize = 256

    static let spec = CommandSpec(
      "history", abstract: "Print committed changes, oldest first.",
      discussion: "Without --since, starts at the oldest change still kept (see 'compact').",
      options: FeedOptions.declarations)

    /// Where to start (nil: the oldest change kept), and how many changes to print at most.
    let feed: FeedOptions

    init(_ arguments: ParsedArguments) throws {
      feed = try FeedOptions(arguments)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      let store = try context.openForReading(try context.location())
      let cursorWidth = try store.bounds().head.description.count
      var start = feed.since ?? .beginning
      var remaining = feed.limit ?? .max
      while remaining > 0 {
        let page = try store.history(from: start, limit: min(remaining, Self.pageSize))
        guard let last = page.last else { break }
        let originWidth = max(10, page.map { Presenter.display($0.origin).count }.max() ?? 0)
        for entry in page {
          try context.output.write(
            try context.presenter.change(entry, cursorWidth: cursorWidth, originWidth: originWidth))
        }
        remaining -= page.count
        start = .after(last.cursor)
      }
      return .success
    }
  }
}

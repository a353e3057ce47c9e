import SessionStorage

extension SessionCtl {
  /// `watch`: a snapshot line (unless `since` is given), then one line per change as it
  /// commits, until `limit` changes, SIGINT/SIGTERM, or the output's reader goes away.
  func watch(_ location: DatabaseLocation, _ presenter: Presenter, since: FeedStart?, limit: Int?)
    async throws
    -> ExitCode
  {
    let stop = StopSignals.shared
    let listening = stop.listen()
    defer { withExtendedLifetime(listening) {} }
    let store = try openForReading(location)
    let changes: SessionSubscription
    if let since {
      changes = try store.changes(from: since)
    } else {
      let snapshot = try store.snapshotAndChanges()
      try output.write(
        try presenter.snapshot(SessionSnapshot(state: snapshot.state, cursor: snapshot.cursor)))
      changes = snapshot.changes
    }
    if limit == 0 { return .success }
    // Never silently blind: when file notifications cannot be set up, say once that
    // changes arrive by polling, and why.
    if case .polling(let interval, let reason) = changes.wakeMode {
      try errors.write(
        "sessionctl: warning: cannot watch the file for changes (\(reason)); polling every \(interval)")
    }
    // Aligned like `history` for the cursors of today; lines cannot be measured ahead.
    let cursorWidth = try store.bounds().head.description.count
    let output = self.output
    let printing = Task { () async throws -> Void in
      var count = 0
      for try await entry in changes {
        try output.write(try presenter.change(entry, cursorWidth: cursorWidth, originWidth: 10))
        count += 1
        if let limit, count >= limit { return }
      }
    }
    stop.onStop { printing.cancel() }
    try await printing.value
    return stop.reason?.exitCode ?? .success
  }
}

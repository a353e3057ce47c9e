import SessionStorage

extension SessionCtl {
  /// `login`: the change, or "no change" when that user is already signed in.
  func login(_ username: String, _ location: DatabaseLocation, _ presenter: Presenter) throws -> ExitCode {
    let name = try Username.validated(username)  // before the file is created
    let store = try openForWriting(location)
    return try printWrite(try store.logIn(as: name), store, presenter) {
      "already logged in as \(Presenter.display(name))"
    }
  }

  /// `logout`: the change, or "no change" when nobody is signed in.
  func logout(_ location: DatabaseLocation, _ presenter: Presenter) throws -> ExitCode {
    let store = try openForWriting(location)
    return try printWrite(try store.logOut(), store, presenter) { "nobody is logged in" }
  }

  /// `rename`: the change, or "no change" when the username is already that.
  func rename(_ username: String, _ location: DatabaseLocation, _ presenter: Presenter) throws -> ExitCode {
    let name = try Username.validated(username)
    let store = try openForWriting(location)
    return try printWrite(try store.rename(to: name), store, presenter) {
      "the username is already \(Presenter.display(name))"
    }
  }

  /// `compact`: what was removed and what is kept. A missing file is an error, not created.
  func compact(_ retention: Invocation.Retention, _ location: DatabaseLocation, _ presenter: Presenter)
    throws -> ExitCode
  {
    guard location.exists else {
      throw CLIError(.failure, "\(location.path): no database here (nothing to compact)")
    }
    let store = try openForWriting(location)
    let compaction =
      switch retention {
      case .keep(let count): try store.compact(keepingLast: count)
      case .before(let cursor): try store.compact(before: cursor)
      }
    try output.write(presenter.compaction(compaction))
    return .success
  }

  /// `migrate`: creates the file if needed and lists the migrations applied.
  func migrate(_ location: DatabaseLocation, _ presenter: Presenter) throws -> ExitCode {
    let created = !location.exists
    let store = try openForWriting(location)
    try output.write(
      presenter.migration(path: location.path, created: created, applied: store.appliedMigrations))
    return .success
  }

  private func printWrite(
    _ entry: SessionEntry?, _ store: SessionStore, _ presenter: Presenter, reason: () -> String
  ) throws -> ExitCode {
    if let entry {
      try output.write(try presenter.change(entry))
    } else {
      try output.write(try presenter.noChange(reason(), store.snapshot()))
    }
    return .success
  }
}

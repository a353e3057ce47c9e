import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One of the three writes, with its username already validated.
package enum SessionWrite: Sendable {
  case login(String)
  case logout
  case rename(String)

  /// Validates `username` and makes a login.
  package static func login(username: String) throws -> SessionWrite {
    .login(try Username.validated(username))
  }

  /// Validates `username` and makes a rename.
  package static func rename(to username: String) throws -> SessionWrite {
    .rename(try Username.validated(username))
  }

  /// The state after this write, or nil when it would change nothing.
  package func applied(to state: SessionState) -> (username: String?, isLoggedIn: Bool)? {
    let after: (username: String?, isLoggedIn: Bool)
    switch self {
    case .login(let name): after = (name, true)
    case .logout: after = (state.username, false)
    case .rename(let name): after = (name, state.isLoggedIn)
    }
    return after == (state.username, state.isLoggedIn) ? nil : after
  }
}

/// What a write did, as its own transaction saw it: the entry it committed, or the state
/// and cursor it found when it changed nothing. A response built from it is one atomic
/// observation: no other writer's commit can fall between the write and what it reports.
package enum WriteOutcome: Sendable, Equatable {
  /// The write committed this entry.
  case committed(SessionEntry)
  /// The write changed nothing: this is the state (and its cursor) it found, read in its
  /// own transaction.
  case unchanged(SessionSnapshot)

  /// The committed entry, or nil when the write changed nothing.
  package var entry: SessionEntry? {
    if case .committed(let entry) = self { entry } else { nil }
  }
}

/// The rules for the name a store records as the origin of its writes, the same for every
/// store (``SessionStore/Options/origin``, ``InMemorySessionStore/origin``).
package enum Origin {
  /// The origin of every change made by a client other than this library (the sqlite3
  /// shell, `psql`, another program); no store may take it.
  package static let external = "external"

  /// The most characters an origin may have.
  static let maximumLength = 64

  /// Throws `invalidOrigin` unless `origin` is 1 to 64 characters, none of them a control
  /// character, and not `external`.
  package static func validate(_ origin: String) throws {
    guard !origin.isEmpty, origin.count <= maximumLength, origin != external,
      origin.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
    else {
      throw SessionStorageError(
        .invalidOrigin,
        "origin '\(origin.escapedForTerminal)' must be 1 to \(maximumLength) printable characters and not "
          + "'\(external)'")
    }
  }
}

extension _SessionBackedStore {
  /// Signs in as `username` (validated, stored in Unicode NFC), off the caller's actor: the
  /// main actor stays responsive while the commit is made durable or waits for another
  /// writer's lock.
  ///
  /// Cancelling the task before the write starts throws `CancellationError` (after the
  /// username's validation) and writes nothing; so does cancelling it while the write waits
  /// for a SQLite file's write lock, which stops the wait. A write that committed returns its
  /// entry: cancellation never undoes an acknowledged change.
  /// ``blocking`` offers the same writes for code that may block its thread.
  /// - Returns: the committed change, or nil when already signed in as that user.
  /// - Throws: `SessionStorageError` (`invalidUsername` before anything is written;
  ///   `readOnly` for a read-only store, cancelled or not; `busy` when another writer held
  ///   the lock past the store's timeout, and nothing was written; `unavailable` when a
  ///   PostgreSQL connection is lost, saying whether anything was written), or
  ///   `CancellationError`.
  @discardableResult
  public func logIn(as username: String) async throws -> SessionEntry? {
    try await _core.write(.login(username: username)).entry
  }

  /// Signs out, off the caller's actor; cancellation as for ``logIn(as:)``. The username is
  /// kept, so an app can offer "continue as …"; the `loggedOut(username:)` event names them.
  /// - Returns: the committed change, or nil when nobody was signed in.
  @discardableResult
  public func logOut() async throws -> SessionEntry? { try await _core.write(.logout).entry }

  /// Changes the username (validated, stored in Unicode NFC) and leaves the login state as it
  /// is, off the caller's actor; cancellation as for ``logIn(as:)``.
  /// - Returns: the committed change, or nil when the username is already `username`.
  @discardableResult
  public func rename(to username: String) async throws -> SessionEntry? {
    try await _core.write(.rename(to: username)).entry
  }

  /// The same writes, blocking the calling thread until they commit: for command-line
  /// tools, scripts and benchmarks, never for a main thread.
  public var blocking: BlockingWrites { BlockingWrites(core: _core) }
}

/// A store's writes that block the calling thread until the commit is durable, and while
/// another writer holds the lock (up to the store's timeout): `try store.blocking.logIn(as:)`.
///
/// For code with a thread to spare (a command-line tool, a script, a benchmark). From an
/// actor, use the store's `async` writes, which run off the caller's actor. Their name says
/// they block, so a synchronous closure on the main thread cannot pick one by accident.
public struct BlockingWrites: Sendable {
  let core: _SessionStoreCore

  /// Signs in as `username` (validated, stored in Unicode NFC) and blocks until it commits.
  /// - Returns: the committed change, or nil when already signed in as that user.
  /// - Throws: ``SessionStorageError``, as the `async` `logIn(as:)` throws it
  ///   (`invalidUsername` before anything is written, `readOnly`, `busy`, `unavailable`).
  @discardableResult
  public func logIn(as username: String) throws -> SessionEntry? {
    try core.write(.login(username: username)).entry
  }

  /// Signs out, keeping the username, and blocks until it commits.
  /// - Returns: the committed change, or nil when nobody was signed in.
  /// - Throws: ``SessionStorageError``, as ``logIn(as:)`` does.
  @discardableResult
  public func logOut() throws -> SessionEntry? { try core.write(.logout).entry }

  /// Changes the username, keeping the login state, and blocks until it commits.
  /// - Returns: the committed change, or nil when the username is already `username`.
  /// - Throws: ``SessionStorageError``, as ``logIn(as:)`` does.
  @discardableResult
  public func rename(to username: String) throws -> SessionEntry? {
    try core.write(.rename(to: username)).entry
  }

  /// Commits `write` and returns what it did as its transaction saw it: its entry, or the
  /// state and cursor it found when it changed nothing (for a response that must be one
  /// observation, such as `sessionctl`'s "no change" line).
  package func outcome(of write: SessionWrite) throws -> WriteOutcome { try core.write(write) }
}

extension _SessionStoreCore {
  /// Commits `write` on the calling thread.
  func write(_ write: SessionWrite) throws -> WriteOutcome {
    try backend.requireWritable()
    return try backend.commit(write, isCancelled: { false })
  }

  /// Commits `write` off the caller's actor: on the backend's write queue, or on the
  /// caller's task for a backend whose writes never wait. Whichever it is, a task cancelled
  /// before the write starts writes nothing.
  func write(_ write: SessionWrite) async throws -> WriteOutcome {
    try backend.requireWritable()
    guard let queue = backend.writeQueue else {
      try Task.checkCancellation()
      return try backend.commit(write, isCancelled: { false })
    }
    let job = QueuedWrite(backend)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        queue.async { continuation.resume(with: job.run(write)) }
      }
    } onCancel: {
      job.cancel()
    }
  }
}

/// A write waiting on a write queue. It lets go of its backend before the caller resumes,
/// so that a store released right after `await store.logIn(as:)` closes its file or
/// connections at once.
private final class QueuedWrite: Sendable {
  private let backend: Mutex<(any SessionBackend)?>
  private let cancelled = Atomic(false)

  init(_ backend: any SessionBackend) { self.backend = Mutex(backend) }

  func cancel() { cancelled.store(true, ordering: .relaxed) }

  func run(_ write: SessionWrite) -> Result<WriteOutcome, any Error> {
    // A job runs once; a second run finds no backend and writes nothing.
    guard let backend = backend.withLock({ $0.take() }) else { return .failure(CancellationError()) }
    let isCancelled: @Sendable () -> Bool = { [self] in cancelled.load(ordering: .relaxed) }
    if isCancelled() { return .failure(CancellationError()) }
    return Result { try backend.commit(write, isCancelled: isCancelled) }
  }
}

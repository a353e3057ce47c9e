import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization

/// The processes the scenarios spawn.
enum Children {
  /// Writes `count` changes (0: until killed), printing each acknowledged cursor as soon
  /// as it is committed. Names are unique per origin and step, so no write is a no-op even
  /// with other writers racing: a login, a rename, and every fourth step a logout. With
  /// `keepGoing`, a write that fails prints "failed NAME: MESSAGE" and the next step follows on the
  /// same instances (a failed commit must leave them fit to write).
  static func write(
    path: String, count: Int, origin: String, instances: Int,
    durability: SessionStore.Durability = .full, keepGoing: Bool = false
  ) throws -> Int32 {
    // Several instances on the file, written through in turn: they share one set of
    // connections, and a kill must lose nothing any of them acknowledged.
    let stores = try (0..<max(1, instances)).map { _ in
      try SessionStore(path: path, options: .init(durability: durability, origin: origin))
    }
    var step = 0
    while count == 0 || step < count {
      let store = stores[step % stores.count]
      let name = "\(origin)-\(step)"
      defer { step += 1 }
      let entry: SessionEntry?
      do {
        switch step % 4 {
        case 0: entry = try store.logIn(as: name)
        // Another writer may have signed out first: then sign in under the new name instead.
        case 3: entry = try store.logOut() ?? store.logIn(as: name)
        default: entry = try store.rename(to: name)
        }
      } catch  where keepGoing {
        Torture.emit("failed \(name): \(error)")
        continue
      }
      if let entry { Torture.emit(entry.cursor.description) }
    }
    return 0
  }

  /// Reads the state repeatedly, as an app's screens would.
  static func read(path: String, count: Int) throws -> Int32 {
    let store = try SessionStore(path: path, options: .init(readOnly: true))
    for _ in 0..<count { _ = try store.state }
    return 0
  }

  /// Prints "cursor origin" for each of the next N changes (0: until stopped); "ready" once
  /// subscribed; "ended DESCRIPTION" (exit 3) when the feed ends with a `FeedError`. `path`
  /// may be a PostgreSQL URL (`postgresql://…`): the child then follows that store.
  static func subscribe(path: String, count: Int) throws -> Int32 {
    let store: any SessionRepository =
      path.hasPrefix("postgresql://") || path.hasPrefix("postgres://")
      ? try PostgresSessionStore(url: path, options: .init(readOnly: true))
      : try SessionStore(path: path, options: .init(readOnly: true))
    let changes = try store.changes(from: .now)
    Torture.emit("ready")
    let done = DispatchSemaphore(value: 0)
    let failure = Mutex<(any Error)?>(nil)
    Task {
      do {
        var received = 0
        for try await entry in changes {
          Torture.emit("\(entry.cursor) \(entry.origin)")
          received += 1
          if received == count { break }
        }
      } catch {
        failure.withLock { $0 = error }
      }
      done.signal()
    }
    done.wait()
    switch failure.withLock({ $0 }) {
    case .none: return 0
    case .some(let error as FeedError):
      Torture.emit("ended \(error)")
      return 3
    case .some(let error): throw error
    }
  }
}

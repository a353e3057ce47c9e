import Dispatch
import SessionStorage

/// `sessionbench child-subscriber --db PATH`: subscribes to the store's changes from now,
/// says `ready CURSOR`, then one `CURSOR NANOSECONDS` line per entry the moment the
/// subscription hands it over (``Monotonic/now()``, comparable across processes).
enum ChildSubscriber {
  static func run(path: String) throws -> Never {
    try serve(SessionStore(path: path, options: .init(origin: "sessionbench-child")))
  }

  /// Subscribes to `store`'s changes from now and reports them as ``run(path:)`` says.
  static func serve(_ store: some SessionRepository) throws -> Never {
    let changes = try store.changes(from: .now)
    ChildControl.say("ready \(changes.cursor.value)")
    ChildControl.serveStdin()
    Task.detached {
      do {
        for try await entry in changes {
          let now = Monotonic.now()
          ChildControl.say("\(entry.cursor.value) \(now)")
        }
      } catch {
        ChildControl.say("error \(error)")
      }
      _ = store
    }
    dispatchMain()
  }
}

import Foundation
import SessionStorage

/// `sessionbench writer --db PATH --count N [--origin NAME] [--durability full|normal]`:
/// N writes through `SessionStore`, alternating login and logout, each acknowledged
/// cursor printed on its own line the moment the write returned (for multi-process tests).
///
/// Every write commits exactly one change, also with other writers on the same file:
/// logins use a fresh username (`NAME-PID-I`), and a logout that another process made
/// redundant (nobody signed in any more) becomes a login under a fresh name instead.
enum Writer {
  static func run(path: String, count: Int, origin: String, durability: SessionStore.Durability) throws {
    let store = try SessionStore(path: path, options: .init(durability: durability, origin: origin))
    let prefix = "\(origin)-\(getpid())"
    for index in 0..<count {
      var entry =
        index.isMultiple(of: 2) ? try store.login(username: "\(prefix)-\(index)") : try store.logout()
      if entry == nil { entry = try store.login(username: "\(prefix)-\(index)-again") }
      guard let entry else {
        throw BenchError("write \(index) changed nothing, even as a login under a fresh name")
      }
      ChildControl.say(String(entry.cursor.rawValue))
    }
  }
}

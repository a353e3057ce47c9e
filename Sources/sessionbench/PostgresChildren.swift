import CLibPQ
import Foundation
import SessionStoragePostgres
import SystemKit

/// The child processes of `pg-deliver-remote`; same output as ``ChildSubscriber``.
enum PostgresChildren {
  /// `sessionbench child-pg-subscriber --postgres URL --schema NAME`: a
  /// `PostgresSessionStore` on the schema and `changes(from: .now)`.
  static func subscriber(server: String, schema: String) throws -> Never {
    let store = try PostgresSessionStore(
      url: PostgresSchemas.url(server, schema: schema), options: .init(origin: "sessionbench-child"))
    try ChildSubscriber.serve(store)
  }

  /// `sessionbench child-pg-raw-listener --postgres URL --schema NAME`: the baseline, written
  /// the way one would in C. `LISTEN` on the schema's channel; `poll` on `PQsocket` (1 s
  /// timeout as the safety net), `PQconsumeInput`, `PQnotifies`, then the store's page
  /// SELECT of the rows after the last one seen, with `PQexecParams`.
  static func rawListener(server: String, schema: String) throws -> Never {
    let connection = try RawPQ(url: server, schema: schema)
    try connection.exec("LISTEN \(RawPQ.quoted("session_changes_" + schema))")
    var last = try connection.integer("SELECT head FROM session WHERE id = 1")
    ChildControl.say("ready \(last)")
    ChildControl.serveStdin()
    let socket = PQsocket(connection.handle)
    while true {
      var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
      let ready = try retryingOnInterrupt { poll(&descriptor, 1, 1000) }
      if ready > 0 {
        guard PQconsumeInput(connection.handle) == 1 else {
          throw BenchError(
            "the LISTEN connection was lost: \(String(cString: PQerrorMessage(connection.handle)))")
        }
        var notified = false
        while let notification = PQnotifies(connection.handle) {
          PQfreemem(notification)
          notified = true
        }
        if !notified { continue }
      }
      try connection.query(RawPQReads.pageSQL, [String(last), "256"]) { result in
        RawPQReads.readRows(result) { cursor in
          last = cursor
          ChildControl.say("\(cursor) \(Monotonic.now())")
        }
      }
    }
  }
}

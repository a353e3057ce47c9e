import Dispatch
import Foundation
import SessionStorage
import SessionStoragePostgres
import SystemKit
import ToolingKit

// sessionbench's children speak ToolingKit's `ChildChannel` protocol: `ready CURSOR` once
// subscribed, then `CURSOR NANOSECONDS` for each entry the moment it arrives
// (``Monotonic/now()``, comparable across processes); the command `cpu` answers
// `cpu NANOSECONDS` of the child's CPU time; the end of its standard input ends it.

/// A child that a scenario starts: a subscriber, a raw watcher or a `sessionctl watch`. Its
/// `CURSOR NANOSECONDS` lines (a watch's change lines) go to ``Arrivals`` as soon as they
/// are read; its stderr is ours.
final class BenchChild: Sendable {
  private let process: ChildProcess
  /// A `sessionctl watch`: ready once it printed its snapshot line, ended with SIGTERM.
  private let isWatch: Bool

  /// Starts `sessionbench ARGUMENTS…`, reporting received cursors to `arrivals`.
  convenience init(_ arguments: [String], arrivals: Arrivals?) throws {
    try self.init(arguments) { cursor, time in arrivals?.arrive(cursor, at: time) }
  }

  /// Starts `sessionbench ARGUMENTS…`, handing each `CURSOR NANOSECONDS` line to `entry`
  /// as soon as it is read.
  init(_ arguments: [String], entry: @escaping @Sendable (Int64, UInt64) -> Void) throws {
    do {
      process = try ChildProcess.thisProgram(
        arguments, stdin: .pipe, stdout: .collected(intercept: { Self.arrival($0, entry) }))
    } catch {
      throw BenchError("\(error)")
    }
    isWatch = false
  }

  /// Starts `sessionctl watch --json --db PATH` with `environment`, reporting the cursor of
  /// each change line to `arrivals` at the moment this process reads the line.
  init(watch sessionctl: String, path: String, environment: [String: String], arrivals: Arrivals) throws {
    do {
      process = try ChildProcess(
        sessionctl, ["watch", "--json", "--db", path], environment: environment, stdin: .pipe,
        stdout: .collected(intercept: { line in
          guard let cursor = Self.changeCursor(line) else { return false }
          arrivals.arrive(cursor, at: Monotonic.now())
          return true
        }))
    } catch {
      throw BenchError("\(error)")
    }
    isWatch = true
  }

  /// The cursor of a `sessionctl watch --json` change line, nil for any other line.
  static func changeCursor(_ line: String) -> Int64? {
    let prefix = #"{"type":"change","cursor":"#
    guard line.hasPrefix(prefix) else { return nil }
    return Int64(line.dropFirst(prefix.count).prefix { $0 != "," })
  }

  /// Starts `program ARGUMENTS…` with `environment` (a program that says `ready`, serves
  /// its standard input and ends at its end, as the memory tests' children do).
  init(program: String, _ arguments: [String], environment: [String: String]) throws {
    do {
      process = try ChildProcess(
        program, arguments, environment: environment, stdin: .pipe, stdout: .collected())
    } catch {
      throw BenchError("\(error)")
    }
    isWatch = false
  }

  /// Hands a `CURSOR NANOSECONDS` line to `entry`; false for any other line.
  private static func arrival(_ line: String, _ entry: @Sendable (Int64, UInt64) -> Void) -> Bool {
    guard line.utf8.first.map({ (0x30...0x39).contains($0) }) == true else { return false }
    let fields = line.split(separator: " ")
    guard fields.count == 2, let cursor = Int64(fields[0]), let time = UInt64(fields[1]) else { return false }
    entry(cursor, time)
    return true
  }

  /// The child's process id, for its `/proc/PID/status`.
  var pid: pid_t { process.pid }

  /// Sends `command` and returns the child's answer line.
  func ask(_ command: String, within timeout: Duration = .seconds(30)) throws -> String {
    do {
      return try process.ask(command, within: timeout)
    } catch {
      throw BenchError(error.description)
    }
  }

  func waitUntilReady() throws {
    do {
      if isWatch {
        let line = try process.answer()
        guard line.hasPrefix(#"{"type":"snapshot","#) else {
          throw BenchError("sessionctl watch (pid \(process.pid)) printed '\(line)' before its snapshot")
        }
      } else {
        try process.awaitReady()
      }
    } catch let error as ChildChannel.Failure {
      throw BenchError(error.description)
    }
  }

  /// The CPU time the child has used so far, in nanoseconds.
  func cpuTime() throws -> UInt64 {
    let line: String
    do {
      line = try process.ask("cpu")
    } catch {
      throw BenchError(error.description)
    }
    guard line.hasPrefix("cpu "), let value = UInt64(line.dropFirst(4)) else {
      throw BenchError("child \(process.pid) answered '\(line)' to cpu")
    }
    return value
  }

  func finish() {
    if isWatch { process.kill(SIGTERM) }
    process.finish()
  }

  deinit { finish() }
}

extension ChildChannel {
  /// Says `ready CURSOR` and serves the parent's `cpu` command.
  static func serve(readyAfter cursor: Int64) {
    sayReady(String(cursor))
    serveInput { $0 == "cpu" ? "cpu \(Monotonic.processCPU())" : nil }
  }
}

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
    ChildChannel.serve(readyAfter: changes.cursor.value)
    Task.detached {
      do {
        for try await entry in changes {
          let now = Monotonic.now()
          ChildChannel.say("\(entry.cursor.value) \(now)")
        }
      } catch {
        ChildChannel.say("error \(error)")
      }
      _ = store
    }
    dispatchMain()
  }
}

/// The child processes of `pg-deliver-remote`; same output as ``ChildSubscriber``.
enum PostgresChildren {
  /// `sessionbench child-pg-subscriber --postgres URL --schema NAME`: a
  /// a store on the schema (`SessionStore(postgresURL:)`) and `changes(from: .now)`.
  static func subscriber(server: String, schema: String) throws -> Never {
    let store = try SessionStore(
      postgresURL: PostgresSchemas.url(server, schema: schema), options: .init(origin: "sessionbench-child"))
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
    ChildChannel.serve(readyAfter: last)
    let libpq = connection.libpq
    let socket = libpq.PQsocket(connection.handle)
    while true {
      var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
      let ready = try retryingOnInterrupt { poll(&descriptor, 1, 1000) }
      if ready > 0 {
        guard libpq.PQconsumeInput(connection.handle) == 1 else {
          let reason = libpq.PQerrorMessage(connection.handle).map { String(cString: $0) } ?? "no message"
          throw BenchError("the LISTEN connection was lost: \(reason)")
        }
        var notified = false
        while let notification = libpq.PQnotifies(connection.handle) {
          libpq.PQfreemem(notification)
          notified = true
        }
        if !notified { continue }
      }
      try connection.query(RawPQReads.pageSQL, [String(last), "256"]) { result in
        RawPQReads.readRows(result, libpq) { cursor in
          last = cursor
          ChildChannel.say("\(cursor) \(Monotonic.now())")
        }
      }
    }
  }
}

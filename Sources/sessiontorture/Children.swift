import CommandLineKit
import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import ToolingKit

/// The processes the scenarios spawn.
enum Children {
  /// Writes `count` changes (0: until killed) to the file or PostgreSQL URL `path`, printing
  /// each acknowledged cursor as soon as it is committed. Names are unique per origin,
  /// process and step, so no write is a no-op (or a rename to another account's name) even
  /// with other writers racing, also writers of an earlier run: a login, a rename, and
  /// every fourth step a logout. With `keepGoing`, a write that fails prints "failed NAME:
  /// MESSAGE" and the next step follows on the same instances (a failed commit must leave
  /// them fit to write). `names` replaces the names' `ORIGIN-PID` prefix (the chaos driver
  /// predicts each write, so it gives one no other writer uses).
  static func write(
    path: String, count: Int, origin: String, instances: Int,
    durability: SessionStore.Durability = .full, keepGoing: Bool = false, names: String? = nil
  ) throws -> Int32 {
    // Several instances on the file, written through in turn: they share one set of
    // connections, and a kill must lose nothing any of them acknowledged.
    let stores = try (0..<max(1, instances)).map { _ in
      try writable(path, origin: origin, durability: durability)
    }
    var step = 0
    while count == 0 || step < count {
      let store = stores[step % stores.count]
      let name = "\(names ?? "\(origin)-\(getpid())")-\(step)"
      defer { step += 1 }
      let entry: SessionEntry?
      do {
        switch step % 4 {
        case 0: entry = try store.blocking.logIn(as: name)
        // Another writer may have signed out first: then sign in under the new name instead.
        case 3:
          entry = try store.blocking.logOut() ?? store.blocking.logIn(as: name)
          // Every fourth step adds an account: the oldest inactive one goes once the roster
          // nears its limit (another writer may have removed it first). The roster is read
          // every 64th step, so that the writer's pace does not depend on its size.
          let roster = try step % 64 == 3 ? store.roster() : nil
          if let roster, roster.accounts.count > SessionRoster.limit / 2,
            let oldest = roster.accounts.first(where: { $0.id != roster.activeID })
          {
            if let entry { ChildChannel.say(entry.cursor.description) }
            do {
              try store.blocking.remove(oldest.username).map { ChildChannel.say($0.cursor.description) }
            } catch SessionStorageError.Code.accountNotFound {}
            continue
          }
        default: entry = try store.blocking.rename(to: name)
        }
      } catch  where keepGoing {
        ChildChannel.say("failed \(name): \(error)")
        continue
      }
      if let entry { ChildChannel.say(entry.cursor.description) }
    }
    return 0
  }

  /// A writable store on `path`: the file, or the store a `postgresql://` URL names.
  private static func writable(
    _ path: String, origin: String, durability: SessionStore.Durability = .full
  ) throws -> SessionStore {
    PostgresLocation.isURL(path)
      ? try SessionStore(postgresURL: path, options: .init(origin: origin))
      : try SessionStore(path: path, options: .init(durability: durability, origin: origin))
  }

  /// Whether `error` is a COMMIT of the SQLite store that failed with an I/O error
  /// (`SQLITE_IOERR`, 10): the library then says the change may still be in the `-wal`, so
  /// its outcome is unknown until the next write.
  static func outcomeUnknown(_ error: any Error) -> Bool {
    guard let error = error as? SessionStorageError, error.code == .sqlite, let code = error.resultCode else {
      return false
    }
    return code & 0xff == 10
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
  ///
  /// With `detail` (the chaos driver's subscriber processes) it prints "ready CURSOR", then
  /// "entry NS JSON" for each entry (NS: ``Monotonic/now()`` when it arrived, JSON: the
  /// entry as `sessionctl --json` prints it), and on a `FeedError` one line of
  /// ``ChaosChildLine``. `safetyPoll` sets the store's safety poll (seconds).
  static func subscribe(path: String, count: Int, detail: Bool = false, safetyPoll: Double? = nil) throws
    -> Int32
  {
    let poll = safetyPoll.map { Duration.milliseconds(Int64($0 * 1000)) } ?? .seconds(1)
    let store: any SessionRepository =
      PostgresLocation.isURL(path)
      ? try SessionStore(postgresURL: path, options: .init(readOnly: true, safetyPollInterval: poll))
      : try SessionStore(path: path, options: .init(readOnly: true, safetyPollInterval: poll))
    let changes = try store.changes(from: .now)
    ChildChannel.sayReady(detail ? changes.cursor.description : nil)
    let done = DispatchSemaphore(value: 0)
    let failure = Mutex<(any Error)?>(nil)
    Task {
      do {
        var received = 0
        let encoder = JSONEncoder()
        for try await entry in changes {
          if detail {
            let json = String(decoding: try encoder.encode(entry), as: UTF8.self)
            ChildChannel.say("entry \(Monotonic.now()) \(json)")
          } else {
            ChildChannel.say("\(entry.cursor) \(entry.origin)")
          }
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
      ChildChannel.say(detail ? ChaosChildLine.ended(error) : "ended \(error)")
      return 3
    case .some(let error): throw error
    }
  }

  /// Makes each write of `actions` through one store (the file or PostgreSQL URL `path`),
  /// `pause` ms after the previous one, printing one ``ChaosChildLine`` per write as it
  /// returns (it goes on after a failed one; "unknown" instead of "error" for an I/O error,
  /// ``outcomeUnknown(_:)``): "ready" once the store is open, "done" after the last write.
  /// With `hold` it then stays alive until its standard input ends.
  static func apply(path: String, origin: String, actions: [String], pause: Int, hold: Bool) throws -> Int32 {
    let parsed = try actions.map { argument in
      // A logout of every account writes several entries; each write here reports one.
      guard let action = ChaosStep.Action(argument: argument), argument != "logout-all" else {
        throw TortureFailure(
          "not a write of one entry: '\(argument)' (login=NAME, logout, logout=NAME, rename=NAME, "
            + "rename=NAME>NEW, switch=NAME or remove=NAME)")
      }
      return action
    }
    let store = try writable(path, origin: origin)
    ChildChannel.sayReady()
    let encoder = JSONEncoder()
    for action in parsed {
      if pause > 0 { usleep(UInt32(pause) * 1000) }
      do {
        let entry = try action.make(through: store).first
        let now = Monotonic.now()
        if let entry {
          ChildChannel.say("ok \(now) \(String(decoding: try encoder.encode(entry), as: UTF8.self))")
        } else {
          ChildChannel.say("none \(now)")
        }
      } catch {
        let outcome = Self.outcomeUnknown(error) ? "unknown" : "error"
        ChildChannel.say(
          "\(outcome) \(Monotonic.now()) \(String(describing: error).split(whereSeparator: \.isNewline).joined(separator: " "))"
        )
      }
    }
    ChildChannel.say("done")
    if hold { ChildChannel.waitForEndOfInput() }
    return 0
  }
}

/// The lines the chaos driver's child processes print about endings, and how the driver
/// reads them back.
enum ChaosChildLine {
  /// "ended NS KIND …" for a `FeedError`: `compacted REQUESTED OLDEST`, `rewritten CURSOR
  /// REASON`, `ahead REQUESTED HEAD`, or `other DESCRIPTION`.
  static func ended(_ error: FeedError) -> String {
    let now = Monotonic.now()
    switch error {
    case .cursorCompacted(let requested, let oldest): return "ended \(now) compacted \(requested) \(oldest)"
    case .historyRewritten(let cursor, let reason): return "ended \(now) rewritten \(cursor) \(reason)"
    case .cursorAhead(let requested, let head): return "ended \(now) ahead \(requested) \(head)"
    default: return "ended \(now) other \(error)"
    }
  }

  /// The ending an "ended …" line describes.
  static func ending(_ line: String) -> ChaosEnding {
    let words = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
    guard words.count >= 4 else { return .other(line) }
    let rest = words.count > 4 ? words[4] : ""
    switch words[2] {
    case "compacted":
      guard let requested = Int64(words[3]), let oldest = Int64(rest) else { return .other(line) }
      return .feed(.cursorCompacted(requested: Cursor(requested), oldestAvailable: Cursor(oldest)))
    case "rewritten":
      guard let cursor = Int64(words[3]) else { return .other(line) }
      return .feed(.historyRewritten(cursor: Cursor(cursor), reason: rest))
    case "ahead":
      guard let requested = Int64(words[3]), let head = Int64(rest) else { return .other(line) }
      return .feed(.cursorAhead(requested: Cursor(requested), head: Cursor(head)))
    default: return .other(line)
    }
  }
}

/// The children's command lines: the options' help says what each does.
extension Torture {
  static let writes = CommandLineOption<Int>(
    "count", placeholder: "n", help: "How many writes (default 0: until killed).")
  static let origin = CommandLineOption<String>(
    "origin", placeholder: "name", help: "The origin (default torture).")
  static let instances = CommandLineOption<Int>(
    "instances", placeholder: "k", help: "How many instances to write through in turn (default 1).")
  static let normalDurability = CommandLineFlag(
    "normal-durability", help: "Open with durability normal (synchronous=NORMAL) instead of full.")
  static let names = CommandLineOption<String>(
    "names", placeholder: "prefix",
    help: "The names' prefix, before -STEP (default ORIGIN-PID: unique per process).")
  static let keepGoing = CommandLineFlag(
    "keep-going", help: "Print \"failed NAME: MESSAGE\" for a write that fails and go on (default: exit).")
  static let reads = CommandLineOption<Int>("count", placeholder: "n", help: "How many reads (default 1000).")
  static let changes = CommandLineOption<Int>(
    "count", placeholder: "n", help: "How many changes to print (default 1; 0: until stopped).")
  static let detail = CommandLineFlag(
    "detail",
    help: "Print \"entry NS JSON\" lines with the arrival time and the whole entry (the chaos driver's).")
  static let safetyPoll = CommandLineOption<Double>(
    "safety-poll", placeholder: "seconds", help: "The store's safety poll interval (default 1).")
  static let pause = CommandLineOption<Int>(
    "pause-ms", placeholder: "ms", help: "How long to wait before each write (default 0).")
  static let hold = CommandLineFlag(
    "hold", help: "After the last write, stay alive until standard input ends.")
  static let actions = CommandLineArgument<String>(
    "write",
    help:
      "login=NAME, logout, logout=NAME, rename=NAME, rename=NAME>NEW, switch=NAME or remove=NAME, in this order.",
    isRepeating: true)

  /// The processes the scenarios spawn (``Children``).
  static let children = [
    TortureCommand(
      CommandSpec(
        "write", abstract: "A child: login, rename and logout in turn; print each acknowledged cursor.",
        options: [writes, origin, instances, normalDurability, keepGoing, names])
    ) { arguments in
      try Children.write(
        path: arguments.required(db), count: arguments[writes] ?? 0, origin: arguments[origin] ?? "torture",
        instances: arguments[instances] ?? 1, durability: arguments[normalDurability] ? .normal : .full,
        keepGoing: arguments[keepGoing], names: arguments[names])
    },
    TortureCommand(CommandSpec("read", abstract: "A child: read the state <n> times.", options: [reads])) {
      try Children.read(path: $0.required(db), count: $0[reads] ?? 1000)
    },
    TortureCommand(
      CommandSpec(
        "subscribe",
        abstract:
          "A child: print \"cursor origin\" for each of the next <n> changes (--db may be a postgresql:// URL).",
        options: [changes, detail, safetyPoll])
    ) {
      try Children.subscribe(
        path: $0.required(db), count: $0[changes] ?? 1, detail: $0[detail], safetyPoll: $0[safetyPoll])
    },
    TortureCommand(
      CommandSpec(
        "apply",
        abstract:
          "A child: make the given writes, printing \"ok NS JSON\", \"none NS\", \"error NS WHY\" or "
          + "\"unknown NS WHY\" (an I/O error at COMMIT) for each.",
        arguments: [actions], options: [origin, pause, hold])
    ) { arguments in
      try Children.apply(
        path: arguments.required(db), origin: arguments[origin] ?? "torture",
        actions: try arguments.values(of: actions), pause: arguments[pause] ?? 0, hold: arguments[hold])
    },
  ]
}

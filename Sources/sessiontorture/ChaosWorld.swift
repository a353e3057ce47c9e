import FeedKit
import Foundation
import SessionStorage
import Synchronization
import SystemKit
import ToolingKit

/// The chaos driver's world: store instances, subscribers and processes on one file, and
/// the ``ChaosModel`` every outcome is compared with as the step runs (returned entries in
/// every field, no-ops, errors, compactions, starts). After every step ``check()`` compares
/// the file, read by a fresh process, and every instance and follower with the model.
final class ChaosWorld {
  /// The safety poll of the driver's stores and subscriber processes: far above the
  /// delivery bound, so that a change that reaches a subscriber only through the poll
  /// (file notifications missed, or not set up) fails the run.
  static let safetyPoll: Duration = .seconds(5)

  /// The file, or the URL of the store on PostgreSQL (with its schema).
  let path: String
  let backend: ChaosBackend
  let sessionctl: String?
  /// How long after it became readable a change must reach every live follower (ns).
  let bound: UInt64
  var instances: [SessionStore] = []
  var followers: [ChaosFollower] = []
  var model: ChaosModel
  /// The model when the last backup was taken: a restore rewinds to it.
  var backedUp: ChaosModel?
  private var nextSerial = 1
  /// How many names ``freshName(_:)`` made.
  private var freshNames = 0
  private var followerCount = 0
  /// The file's rows up to this cursor were compared with the model already.
  var verifiedThrough: Int64 = 0
  var checks = 0
  /// How many writes were acknowledged (and checked), and how many failed as injected.
  private(set) var acknowledged = 0
  var failedWrites = 0
  /// How many unacknowledged writes of killed writers appeared later.
  var appeared = 0
  /// How many writes were refused, as the model predicted.
  var refused = 0
  private var deliveredBefore = 0
  /// What could not run here, said once each.
  private var notes: Set<String> = []

  var backupPath: String { path + ".backup" }

  /// Where a child's stderr is kept for the driver to read: beside the file, or in the
  /// temporary directory for a PostgreSQL store (whose path is a URL).
  var stderrPath: String {
    backend.isPostgres
      ? FileManager.default.temporaryDirectory.appendingPathComponent("sessiontorture-\(getpid()).stderr")
        .path
      : path + ".stderr"
  }

  init(path: String, backend: ChaosBackend = .sqlite, sessionctl: String?, bound: Duration) throws {
    self.path = path
    self.backend = backend
    self.sessionctl = sessionctl
    self.bound = UInt64(bound.milliseconds) * 1_000_000
    if !backend.isPostgres {
      for suffix in ["", "-wal", "-shm", ".link", ".backup", ".stderr"] { unlink(path + suffix) }
    }
    // The store exists before the first step, so every spelling can name it.
    let store = try backend.open(path, origin: "chaos")
    instances.append(store)
    let initial = ChaosState(try store.state)
    guard initial.username == nil, !initial.isLoggedIn else {
      throw TortureFailure("a new store holds \(initial), not (nil, out)")
    }
    model = ChaosModel(initial: initial, at: Monotonic.now())
    guard backend.isPostgres || symlink(path, path + ".link") == 0 else {
      throw TortureFailure("cannot link to \(path)")
    }
  }

  static func options(
    origin: String, durability: SessionStore.Durability = .full, readOnly: Bool = false
  ) -> SessionStore.FileOptions {
    .init(durability: durability, origin: origin, readOnly: readOnly, safetyPollInterval: safetyPoll)
  }

  /// A name no account of any history of this run holds: `prefix` and a number.
  func freshName(_ prefix: String) -> String {
    freshNames += 1
    return "\(prefix)\(freshNames)"
  }

  /// How many entries and values followers delivered (each one verified), so far.
  var delivered: Int { deliveredBefore + followers.reduce(0) { $0 + $1.delivered } }

  /// A number for a new follower.
  func nextFollower() -> Int {
    followerCount += 1
    return followerCount
  }

  /// Counts what a follower that leaves the world delivered.
  func retire(_ follower: ChaosFollower) { deliveredBefore += follower.delivered }

  /// Stops every follower and process and releases every instance.
  func tearDown() {
    if backend.isPostgres { unlink(stderrPath) }
    deliveredBefore = delivered
    for follower in followers {
      switch follower.source {
      case .task(let subscriber): subscriber.cancel()
      case .process(let child):
        child.kill(SIGKILL)
        Self.reap(child)
      }
    }
    followers = []
    instances = []
  }

  /// Says once that something could not run here.
  func note(_ line: String) {
    guard notes.insert(line).inserted else { return }
    FileHandle.standardError.write(Data("sessiontorture chaos: \(line)\n".utf8))
  }

  // MARK: The model

  /// Compares what a write of `action` by `origin` returned (an entry, nil, or the
  /// refusal `refused`: the error's code or message) with the model's prediction by the
  /// library's rules, then commits it. `window`: the wall clock (ms) around the write;
  /// `ackedAt`: when it was acknowledged (``Monotonic/now()``).
  func settle(
    _ action: ChaosStep.Action, origin: String, returned entry: SessionEntry?, refused: String? = nil,
    window: ClosedRange<Int64>, ackedAt: UInt64, by writer: String
  ) throws {
    let predicted = model.predict(action, origin: origin)
    if let refused {
      guard ChaosModel.isRefusal(refused, predicted) else {
        throw TortureFailure(
          "\(writer): \(action) was refused (\(refused)), the model expects \(predicted.description) on "
            + "\(model.state)")
      }
      self.refused += 1
      return
    }
    switch predicted {
    case .refused(let why):
      throw TortureFailure(
        "\(writer): \(action) returned \(entry.map { "entry \($0.cursor) (\($0.change))" } ?? "no change"), the "
          + "model expects a refusal (\(why))")
    case .none:
      guard let entry else { return }
      throw TortureFailure(
        "\(writer): \(action) returned entry \(entry.cursor) (\(entry.change)) for a write the model calls a "
          + "no-op on \(model.state)")
    case .change(var expected):
      guard let entry else {
        throw TortureFailure("\(writer): \(action) returned no change, the model expects \(expected.change)")
      }
      let time = ChaosClock.milliseconds(entry.time)
      try Self.requireTime(time, within: window, of: "\(writer): \(action)")
      expected.setTime(time)
      if let difference = expected.difference(from: entry) {
        throw TortureFailure("\(writer): \(action) returned an entry with \(difference)")
      }
      commit(expected, window: window, at: ackedAt)
    }
  }

  /// Adds an entry the model checked to its log, as acknowledged at `ackedAt` (or, for an
  /// unacknowledged write that appeared, as readable from then on).
  func commit(
    _ entry: ChaosEntry, window: ClosedRange<Int64>, at ackedAt: UInt64, acknowledged: Bool = true
  ) {
    var entry = entry
    entry.serial = nextSerial
    nextSerial += 1
    entry.availableAt = ackedAt
    model.commit(entry)
    model.retainByAge(window: window, at: ackedAt)
    if acknowledged { self.acknowledged += 1 }
  }

  static func requireTime(_ time: Int64, within window: ClosedRange<Int64>, of what: String) throws {
    guard time >= window.lowerBound - ChaosClock.cutoffSlack,
      time <= window.upperBound + ChaosClock.cutoffSlack
    else {
      throw TortureFailure(
        "\(what): the entry's time \(Timestamp.format(ChaosClock.date(time))) is outside the write "
          + "(\(Timestamp.format(ChaosClock.date(window.lowerBound)))…\(Timestamp.format(ChaosClock.date(window.upperBound))))"
      )
    }
  }

  /// The model as a restore of `backup` leaves it: every entry readable again from now on,
  /// the history rewritten now.
  func rewound(to backup: ChaosModel) -> ChaosModel {
    var model = backup
    let now = Monotonic.now()
    for cursor in model.log.keys { model.log[cursor]?.availableAt = now }
    model.rewrittenAt = now
    model.stateSince = now
    model.compactedAt = now
    // The restore writes the whole file: nothing of a killed writer can follow it.
    model.unacknowledged = nil
    verifiedThrough = 0
    return model
  }

  // MARK: Steps

  /// Runs one step; returns the problems it saw (an outcome the model does not allow, an
  /// unexpected error).
  func apply(_ step: ChaosStep) -> [String] {
    do {
      try takeUnacknowledgedIfItAppeared()
      try run(step)
      return []
    } catch {
      return ["\(step) failed: \(error)"]
    }
  }

  func instance(_ index: Int) -> (SessionStore)? {
    instances.isEmpty ? nil : instances[index % instances.count]
  }

  private func run(_ step: ChaosStep) throws {
    switch step {
    case .open(let spelling, let readOnly, let normal):
      // A PostgreSQL store has one name, its URL.
      let name: String
      switch backend.isPostgres ? .path : spelling {
      case .path: name = path
      case .symbolicLink: name = path + ".link"
      case .relativePath:
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        name = String(repeating: "../", count: depth) + path.drop { $0 == "/" }
      }
      instances.append(
        try backend.open(
          name, origin: "chaos\(instances.count)", durability: normal ? .normal : .full, readOnly: readOnly))
    case .release(let index):
      guard !instances.isEmpty else { return }
      instances.remove(at: index % instances.count)
    case .write(let index, let action, let mode): try write(index, action, mode)
    case .shell(let action): try shellWrite(action)
    case .python(let action): try pythonWrite(action)
    case .sessionctl(let action): try sessionctlWrite(action)
    case .compact(let index, let kind): try compact(index, kind)
    case .subscribe(let index, let kind): try subscribe(index, kind)
    case .cancel(let index):
      let live = followers.filter { $0.isLive && !$0.isProcess }
      guard !live.isEmpty else { return }
      live[index % live.count].cancel()
    case .resume(let index): try resume(index)
    case .startChildSubscriber: try startChildSubscriber()
    case .stopChildSubscriber(let index): try stopChildSubscriber(index)
    case .crashWriter(let writes, let count, let microseconds):
      try crashWriter(writes: writes, instances: count, microseconds: microseconds)
    case .killedAtSync(let writes, let when): try killedAtSync(writes: writes, when: when)
    case .checkpoint(let mode):
      _ = try Self.sqlite3(path, "PRAGMA wal_checkpoint(\(mode))")
    case .backup:
      _ = try Self.sqlite3(path, ".backup '\(backupPath)'")
      backedUp = model
    case .restore:
      guard let backedUp else { return }
      _ = try Self.sqlite3(path, ".restore '\(backupPath)'")
      // An administrator rewound the history: what was acknowledged after the backup is
      // gone on purpose. Followers whose last entry is no longer the log's must end with
      // `historyRewritten`; the others go on in the restored history.
      model = rewound(to: backedUp)
      for follower in followers where follower.kind == .values { follower.nextValueFrom = 0 }
    case .tamper(let index): try tamper(index)
    case .replace(let index): try replace(index)
    case .slowPython(let action):
      guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
        note("no /usr/bin/strace: python writes with slow fsyncs run without the delay")
        return try pythonWrite(action)
      }
      try pythonWrite(
        action,
        through: [
          "/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e",
          "inject=fsync,fdatasync:delay_exit=100000",
        ])
    case .settle: usleep(20_000)
    case .retention(let index, let policy): try setRetention(index, policy)
    case .shellRetention(let policy):
      _ = try Self.sqlite3(
        path,
        "UPDATE session_retention SET keep_last = \(policy.keepLast.map(String.init) ?? "NULL"), "
          + "max_age_ms = \(policy.maxAgeMilliseconds.map(String.init) ?? "NULL") WHERE id = 1")
      // Stored only: the feed trigger applies it from the next write on.
      model.policy = policy
    case .sessionctlRetention(let policy): try sessionctlRetention(policy)
    case .ioError(let actions, let when, let sticky): try ioErrorWriter(actions, when: when, sticky: sticky)
    case .liveWriter(let actions, let pause): try liveWriter(actions, pause: pause)
    case .quietWriter:
      // A rename the model calls a change: to a name no account holds.
      try liveWriter([.rename(freshName("quiet"))], pause: 5_500)
    case .snapshotsUnderLoad(let index, let writes): try snapshotsUnderLoad(index, writes: writes)
    }
  }

  /// One write through `store`, by the API `mode` names; an `async` one runs in a task this
  /// thread waits for (the driver's steps are sequential).
  private static func write(
    _ action: ChaosStep.Action, through store: SessionStore, _ mode: ChaosStep.WriteMode
  ) throws -> [SessionEntry] {
    guard mode != .sync else { return try action.make(through: store) }
    let outcome = AsyncOutcome()
    let task = Task {
      do {
        outcome.finish(.success(try await action.make(through: store)))
      } catch {
        outcome.finish(.failure(error))
      }
    }
    if mode == .cancelled { task.cancel() }
    return try outcome.wait().get()
  }

  /// A write through a read-only instance must be refused with `readOnly`.
  private func requireRefusal(_ what: String, _ body: () throws -> Any?) throws {
    do {
      let result = try body()
      throw TortureFailure("\(what) through a read-only instance succeeded: \(String(describing: result))")
    } catch let error as SessionStorageError where error.code == .readOnly {}
  }

  private func write(_ index: Int, _ action: ChaosStep.Action, _ mode: ChaosStep.WriteMode) throws {
    guard let store = instance(index) else { return }
    let writer = "instance #\(index % instances.count) (\(mode.rawValue))"
    if store.isReadOnly {
      return try requireRefusal(writer) { try Self.write(action, through: store, mode) }
    }
    let start = ChaosClock.wallMilliseconds()
    let entries: [SessionEntry]
    do {
      entries = try Self.write(action, through: store, mode)
    } catch let error as SessionStorageError
      where [.usernameTaken, .accountNotFound, .rosterFull].contains(error.code)
    {
      // A refusal writes nothing: the model says whether it is one, and the head must stay.
      try settle(
        action, origin: store.origin, returned: nil, refused: "\(error.code.rawValue): \(error)",
        window: start...ChaosClock.wallMilliseconds(), ackedAt: Monotonic.now(), by: writer)
      try requireHead(store, after: "\(writer): \(action), refused,")
      return
    } catch is CancellationError where mode == .cancelled {
      // A cancelled write writes nothing: the model stays as it is, and the check reads
      // the file. The head is compared at once too.
      return try requireHead(store, after: "\(writer): a write that threw CancellationError")
    }
    let (window, ackedAt) = (start...ChaosClock.wallMilliseconds(), Monotonic.now())
    if case .logoutAll = action {
      return try settle(
        signingOutEveryone: entries, origin: store.origin, window: window, ackedAt: ackedAt, by: writer)
    }
    guard entries.count <= 1 else {
      throw TortureFailure("\(writer): \(action) returned \(entries.count) entries: \(entries.map(\.cursor))")
    }
    try settle(
      action, origin: store.origin, returned: entries.first, window: window, ackedAt: ackedAt, by: writer)
  }

  /// Compares what a logout of every account returned with the model's entries, one for
  /// each signed-in account in the order of their identifiers, then commits them.
  func settle(
    signingOutEveryone entries: [SessionEntry], origin: String, window: ClosedRange<Int64>, ackedAt: UInt64,
    by writer: String
  ) throws {
    let predicted = model.signingOutEveryone(origin: origin)
    guard entries.count == predicted.count else {
      throw TortureFailure(
        "\(writer): logout all returned \(entries.count) entries, the model expects "
          + "\(predicted.map(\.change).joined(separator: "; "))")
    }
    for (entry, predicted) in zip(entries, predicted) {
      var expected = model.rebased(predicted)
      let time = ChaosClock.milliseconds(entry.time)
      try Self.requireTime(time, within: window, of: "\(writer): logout all")
      expected.setTime(time)
      if let difference = expected.difference(from: entry) {
        throw TortureFailure("\(writer): logout all returned an entry with \(difference)")
      }
      commit(expected, window: window, at: ackedAt)
    }
  }

  /// Throws unless `store`'s head is the model's (after a write that wrote nothing).
  private func requireHead(_ store: SessionStore, after what: String) throws {
    let head = try store.bounds().head.value
    if head != model.head {
      throw TortureFailure("\(what) moved the head from \(model.head) to \(head)")
    }
  }

  /// Checks a compaction's answer against the range the model computed for the oldest
  /// cursor, then makes that range the model's (the check reads which one the file holds).
  private func apply(
    _ compaction: CompactionResult, range: ClosedRange<Int64>, from before: Int64, by what: String
  )
    throws
  {
    let found = compaction.bounds.firstAvailable.value
    var problems: [String] = []
    if !range.contains(found) {
      problems.append(
        "left the oldest cursor at \(found), the model says "
          + (range.count == 1 ? "\(range.lowerBound)" : "\(range.lowerBound)…\(range.upperBound)"))
    }
    if compaction.removed != Int(found - before) {
      problems.append(
        "reports \(compaction.removed) removed, from \(before) to \(found) is \(found - before)")
    }
    if compaction.bounds.head.value != model.head {
      problems.append("reports the head \(compaction.bounds.head), the model \(model.head)")
    }
    if compaction.bounds.oldest?.value != (found <= model.head ? found : nil) {
      problems.append(
        "reports the oldest \(String(describing: compaction.bounds.oldest)) for an oldest cursor \(found)")
    }
    guard problems.isEmpty else { throw TortureFailure("\(what) " + problems.joined(separator: "; ")) }
    model.allow(range, at: Monotonic.now())
  }

  private func compact(_ index: Int, _ kind: ChaosStep.Compaction) throws {
    guard let store = instance(index) else { return }
    let what = "compact \(kind) through instance #\(index % instances.count)"
    let before = model.firstAvailable
    let start = ChaosClock.wallMilliseconds()
    let compaction: CompactionResult
    let range: ClosedRange<Int64>
    switch kind {
    case .keepingLast(let count):
      if store.isReadOnly { return try requireRefusal(what) { try store.compact(keepingLast: count) } }
      compaction = try store.compact(keepingLast: count)
      let kept = max(before, model.head - Int64(count) + 1)
      range = kept...kept
    case .before(let back):
      let cursor = max(0, model.head + 1 - Int64(back))
      if store.isReadOnly {
        return try requireRefusal(what) { try store.compact(before: Cursor(cursor)) }
      }
      compaction = try store.compact(before: Cursor(cursor))
      let kept = max(before, min(cursor, model.head + 1))
      range = kept...kept
    case .olderThan(let milliseconds):
      if store.isReadOnly {
        return try requireRefusal(what) { try store.compact(olderThan: .milliseconds(milliseconds)) }
      }
      compaction = try store.compact(olderThan: .milliseconds(milliseconds))
      range = model.olderThanBound(age: milliseconds, window: start...ChaosClock.wallMilliseconds())
    }
    try apply(compaction, range: range, from: before, by: what)
  }

  /// The range `setRetention(policy)` leaves for the oldest cursor: the count first, then
  /// the age (`compact(olderThan:)`'s rule) among what is left.
  func retentionRange(_ policy: ChaosPolicy, window: ClosedRange<Int64>) -> ClosedRange<Int64> {
    var applied = model
    if let keep = policy.keepLast { applied.compact(to: applied.head - Int64(keep) + 1, at: 0) }
    guard let age = policy.maxAgeMilliseconds else { return applied.firstAvailable...applied.firstAvailable }
    return applied.olderThanBound(age: age, window: window)
  }

  private func setRetention(_ index: Int, _ policy: ChaosPolicy) throws {
    guard let store = instance(index)?.file else { return }
    let what = "setRetention(\(policy)) through instance #\(index % instances.count)"
    if store.options.readOnly { return try requireRefusal(what) { try store.setRetention(policy.retention) } }
    let before = model.firstAvailable
    let start = ChaosClock.wallMilliseconds()
    let compaction = try store.setRetention(policy.retention)
    let range = retentionRange(policy, window: start...ChaosClock.wallMilliseconds())
    model.policy = policy
    try apply(compaction, range: range, from: before, by: what)
  }

  func applyRetention(
    _ compaction: CompactionResult, policy: ChaosPolicy, window: ClosedRange<Int64>, by what: String
  )
    throws
  {
    let before = model.firstAvailable
    let range = retentionRange(policy, window: window)
    model.policy = policy
    try apply(compaction, range: range, from: before, by: what)
  }
}

/// The result of an `async` write, handed to the synchronous thread that waits for it.
private final class AsyncOutcome: Sendable {
  private let result = Mutex<Result<[SessionEntry], any Error>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  func finish(_ outcome: Result<[SessionEntry], any Error>) {
    result.withLock { $0 = outcome }
    done.signal()
  }

  func wait() -> Result<[SessionEntry], any Error> {
    done.wait()
    return result.withLock { $0 } ?? .success([])
  }
}

import Foundation
import SessionStorage
import ToolingKit

/// One step of the chaos driver, drawn from the seed alone: the same seed gives the same
/// steps, so a failing run replays, and any prefix of it is a run of its own. Indices pick
/// among the instances or subscribers alive when the step runs (modulo their number); a
/// step with nothing to act on is skipped.
enum ChaosStep: Sendable, CustomStringConvertible {
  /// A write to the roster.
  enum Action: Sendable, CustomStringConvertible {
    case login(String), logout, rename(String)
    /// Signs out the named account (an outside client: `UPDATE accounts`).
    case logoutOf(String)
    /// Makes the named account the active one (an outside client: `UPDATE active_account`).
    case switchTo(String)
    /// Takes the named account out of the roster (an outside client: `DELETE FROM accounts`).
    case remove(String)
    /// Renames the named account (an outside client: `UPDATE accounts`).
    case renameOf(String, to: String)
    /// Signs out every signed-in account, one entry each (instances and sessionctl only: a
    /// writer process reports one entry per write, an outside client edits one row).
    case logoutAll

    var description: String {
      switch self {
      case .login(let name): "login \(name)"
      case .logout: "logout"
      case .logoutOf(let name): "logout \(name)"
      case .rename(let name): "rename \(name)"
      case .switchTo(let name): "switch to \(name)"
      case .remove(let name): "remove \(name)"
      case .renameOf(let name, let newName): "rename \(name) to \(newName)"
      case .logoutAll: "logout all"
      }
    }

    /// How a writer process takes it on its command line: `login=NAME`, `logout`,
    /// `logout=NAME`, `rename=NAME`, `rename=NAME>NEW`, `switch=NAME`, `remove=NAME`,
    /// `logout-all`.
    var argument: String {
      switch self {
      case .login(let name): "login=\(name)"
      case .logout: "logout"
      case .logoutOf(let name): "logout=\(name)"
      case .rename(let name): "rename=\(name)"
      case .switchTo(let name): "switch=\(name)"
      case .remove(let name): "remove=\(name)"
      case .renameOf(let name, let newName): "rename=\(name)>\(newName)"
      case .logoutAll: "logout-all"
      }
    }

    init?(argument: String) {
      let (verb, name) = (argument.prefix { $0 != "=" }, argument.drop { $0 != "=" }.dropFirst())
      switch verb {
      case "login" where !name.isEmpty: self = .login(String(name))
      case "rename" where name.contains(">"):
        let (old, new) = (name.prefix { $0 != ">" }, name.drop { $0 != ">" }.dropFirst())
        guard !old.isEmpty, !new.isEmpty else { return nil }
        self = .renameOf(String(old), to: String(new))
      case "rename" where !name.isEmpty: self = .rename(String(name))
      case "logout-all" where name.isEmpty: self = .logoutAll
      case "switch" where !name.isEmpty: self = .switchTo(String(name))
      case "remove" where !name.isEmpty: self = .remove(String(name))
      case "logout" where name.isEmpty: self = .logout
      case "logout": self = .logoutOf(String(name))
      default: return nil
      }
    }

    /// The write through `store`'s synchronous API: the entries it committed, in order
    /// (none when it changed nothing).
    func make(through store: SessionStore) throws -> [SessionEntry] {
      let entry: SessionEntry?
      switch self {
      case .login(let name): entry = try store.blocking.logIn(as: name)
      case .logout: entry = try store.blocking.logOut()
      case .logoutOf(let name): entry = try store.blocking.logOut(name)
      case .rename(let name): entry = try store.blocking.rename(to: name)
      case .renameOf(let name, let newName): entry = try store.blocking.rename(name, to: newName)
      case .switchTo(let name): entry = try store.blocking.switchTo(name)
      case .remove(let name): entry = try store.blocking.remove(name)
      case .logoutAll: return try store.blocking.logOutAll()
      }
      return entry.map { [$0] } ?? []
    }

    /// The write through `store`'s `async` API: the entries it committed, in order.
    func make(through store: SessionStore) async throws -> [SessionEntry] {
      let entry: SessionEntry?
      switch self {
      case .login(let name): entry = try await store.logIn(as: name)
      case .logout: entry = try await store.logOut()
      case .logoutOf(let name): entry = try await store.logOut(name)
      case .rename(let name): entry = try await store.rename(to: name)
      case .renameOf(let name, let newName): entry = try await store.rename(name, to: newName)
      case .switchTo(let name): entry = try await store.switchTo(name)
      case .remove(let name): entry = try await store.remove(name)
      case .logoutAll: return try await store.logOutAll()
      }
      return entry.map { [$0] } ?? []
    }
  }

  /// How a write through an instance is made: the synchronous API, the `async` one, or the
  /// `async` one from a task cancelled at once (it writes, or throws `CancellationError` and
  /// writes nothing).
  enum WriteMode: String, Sendable, CaseIterable {
    case sync, async, cancelled
  }

  /// How an in-process subscriber starts.
  enum Subscription: String, Sendable, CaseIterable {
    case now, beginning, afterRecent, snapshot, values
  }

  /// How a new instance names the file.
  enum Spelling: String, Sendable, CaseIterable {
    case path, symbolicLink, relativePath
  }

  /// How a compaction step chooses what to delete.
  enum Compaction: Sendable, CustomStringConvertible {
    /// `compact(keepingLast:)`.
    case keepingLast(Int)
    /// `compact(before:)` the cursor `back` below the next one (0: every entry).
    case before(back: Int)
    /// `compact(olderThan:)`, in milliseconds.
    case olderThan(milliseconds: Int64)

    var description: String {
      switch self {
      case .keepingLast(let count): "keeping \(count)"
      case .before(let back): "before head + 1 - \(back)"
      case .olderThan(let milliseconds): "older than \(milliseconds) ms"
      }
    }
  }

  case open(Spelling, readOnly: Bool, normalDurability: Bool)
  case release(Int)
  case write(Int, Action, WriteMode)
  case shell(Action)
  case python(Action)
  case sessionctl(Action)
  case compact(Int, Compaction)
  case subscribe(Int, Subscription)
  case cancel(Int)
  case resume(Int)
  case startChildSubscriber
  case stopChildSubscriber(Int)
  case crashWriter(writes: Int, instances: Int, microseconds: Int)
  /// A writer process SIGKILLed as it enters its `when`-th fsync of the `-wal` (strace fault
  /// injection): a commit's frames in the WAL and not in the wal-index, for the next WAL
  /// recovery to find.
  case killedAtSync(writes: Int, when: Int)
  case checkpoint(String)
  /// `sqlite3 .backup`: a copy to restore later.
  case backup
  /// `sqlite3 .restore` of the last backup: an administrator rewinds the history.
  case restore
  /// A Python write whose every fsync takes 100 ms (strace fault injection).
  case slowPython(Action)
  /// The feed trigger dropped with the shell: a write through an instance and a new open
  /// must be refused; then the trigger is created again with its own SQL.
  case tamper(Int)
  /// The last backup copied and renamed over the file: writes must be refused and
  /// subscribers end; then everything is released and the driver goes on with the new file.
  case replace(Int)
  case settle
  /// `setRetention` through an instance: stored and applied at once.
  case retention(Int, ChaosPolicy)
  /// The policy set with the sqlite3 shell: the feed trigger applies it from the next write on.
  case shellRetention(ChaosPolicy)
  /// `sessionctl retention` with the limits that are set (`--off` for none): the others stay.
  case sessionctlRetention(ChaosPolicy)
  /// A writer process whose `fsync`/`fdatasync` calls fail with EIO from the `when`-th on
  /// (`sticky`) or at the `when`-th only (strace fault injection): what it reports as
  /// written must be in the file, what it reports as failed must not.
  case ioError([Action], when: Int, sticky: Bool)
  /// A writer process that stays alive while it writes, `pause` ms apart: its commits reach
  /// subscribers through file notifications alone (no process exits to touch the file).
  case liveWriter([Action], pauseMilliseconds: Int)
  /// Snapshots taken through an instance while a writer process commits without a pause:
  /// each must be a state and the cursor of the change that made it.
  case snapshotsUnderLoad(Int, writes: Int)
  /// A writer process that stays alive renames after 5.5 s without a write to any watched
  /// file: longer than the watcher re-checks after an event, so only the commit's own file
  /// notification can tell subscribers of it in time.
  case quietWriter

  var description: String {
    switch self {
    case .open(let spelling, let readOnly, let normal):
      "open by \(spelling.rawValue)\(readOnly ? " read-only" : "")\(normal ? " durability normal" : "")"
    case .release(let index): "release instance #\(index)"
    case .write(let index, let action, let mode): "\(action) through instance #\(index) (\(mode.rawValue))"
    case .shell(let action): "sqlite3 shell: \(action)"
    case .python(let action): "python sqlite3: \(action)"
    case .sessionctl(let action): "sessionctl \(action)"
    case .compact(let index, let kind): "compact \(kind) through instance #\(index)"
    case .subscribe(let index, let kind): "subscribe (\(kind.rawValue)) through instance #\(index)"
    case .cancel(let index): "cancel subscriber #\(index)"
    case .resume(let index): "resume subscriber #\(index) after its last cursor"
    case .startChildSubscriber: "start a subscriber process"
    case .stopChildSubscriber(let index): "stop subscriber process #\(index)"
    case .crashWriter(let writes, let instances, let microseconds):
      "writer process (\(instances) instance(s), up to \(writes) writes) SIGKILLed after \(microseconds) µs"
    case .killedAtSync(let writes, let when):
      "writer process (up to \(writes) writes) SIGKILLed as it enters fsync \(when) of the -wal"
    case .checkpoint(let mode): "sqlite3 shell: wal_checkpoint(\(mode))"
    case .backup: "sqlite3 shell: .backup"
    case .restore: "sqlite3 shell: .restore of the last backup"
    case .slowPython(let action): "python sqlite3 with 100 ms fsyncs: \(action)"
    case .tamper(let index): "drop the feed trigger, write through instance #\(index), open, repair"
    case .replace(let index): "rename the last backup over the file, write through instance #\(index), reopen"
    case .settle: "settle: every subscriber catches up"
    case .retention(let index, let policy): "set retention (\(policy)) through instance #\(index)"
    case .shellRetention(let policy): "sqlite3 shell: retention \(policy)"
    case .sessionctlRetention(let policy): "sessionctl retention \(policy)"
    case .ioError(let actions, let when, let sticky):
      "writer process with fsync failing (EIO) at call \(when)\(sticky ? " and after" : ""): "
        + actions.map(\.description).joined(separator: ", ")
    case .liveWriter(let actions, let pause):
      "writer process staying alive, \(pause) ms between writes: "
        + actions.map(\.description).joined(separator: ", ")
    case .snapshotsUnderLoad(let index, let writes):
      "snapshots through instance #\(index) while a writer process makes \(writes) writes"
    case .quietWriter: "a writer process that stays alive renames after 5.5 s of quiet"
    }
  }

  /// The kinds of step (below) that act on what only an SQLite file has: Python's and the
  /// shell's SQLite clients, checkpoints, backups and restores through the shell, the feed
  /// trigger and the file replaced, retention policies, and faults injected into `fsync`.
  private static let sqliteOnly: Set<Int> = [4, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 27]

  /// Draws a step. `sessionctl` says whether the sessionctl steps are possible; `postgres`
  /// leaves out the steps only an SQLite file has (a PostgreSQL run draws the same kinds of
  /// step in the same proportions otherwise).
  static func draw(using random: inout SplitMix64, sessionctl: Bool, postgres: Bool = false) -> ChaosStep {
    let names = ["alice", "bob", "carol", "dave", "eve", "José", "mallory"]
    func action() -> Action {
      switch Int.random(in: 0..<5, using: &random) {
      case 0, 1: .rename(names[Int.random(in: 0..<names.count, using: &random)])
      case 2, 3: .login(names[Int.random(in: 0..<names.count, using: &random)])
      default: .logout
      }
    }
    // A switch, a removal, a logout or a rename of a named account (the library's writes, or
    // an outside client's edits of the roster's tables); through an instance or sessionctl,
    // a logout of every account.
    func rosterAction(withLogoutAll: Bool = false) -> Action {
      let name = names[Int.random(in: 0..<names.count, using: &random)]
      switch Int.random(in: 0..<10, using: &random) {
      case 0: return .switchTo(name)
      case 1: return .remove(name)
      case 2: return .logoutOf(name)
      case 3: return .renameOf(name, to: names[Int.random(in: 0..<names.count, using: &random)])
      case 4 where withLogoutAll: return .logoutAll
      default: return action()
      }
    }
    func actions(_ range: ClosedRange<Int>) -> [Action] {
      (0..<Int.random(in: range, using: &random)).map { _ in rosterAction() }
    }
    func index() -> Int { Int.random(in: 0..<8, using: &random) }
    func policy() -> ChaosPolicy {
      guard Int.random(in: 0..<3, using: &random) > 0 else { return .off }
      let keep = [nil, 1, 2, 3, 5, 8, 20][Int.random(in: 0..<7, using: &random)]
      let age: Int64? = [nil, nil, 1000, 2000, 5000][Int.random(in: 0..<5, using: &random)]
      return keep == nil && age == nil
        ? ChaosPolicy(keepLast: 4) : ChaosPolicy(keepLast: keep, maxAgeMilliseconds: age)
    }
    // (weight, kind): how often each kind of step is drawn.
    let weights = [
      (10, 0), (7, 1), (24, 2), (8, 3), (4, 4), (sessionctl ? 4 : 0, 5), (4, 6), (6, 7), (4, 8), (3, 9),
      (2, 10), (3, 11), (4, 12), (4, 13), (3, 14), (2, 15), (2, 16), (2, 17), (1, 18), (1, 19),
      (2, 20), (1, 21), (sessionctl ? 1 : 0, 22), (2, 23), (3, 24), (2, 25), (1, 26), (2, 27),
    ].map { weight, kind in (postgres && sqliteOnly.contains(kind) ? 0 : weight, kind) }
    var pick = Int.random(in: 0..<weights.reduce(0) { $0 + $1.0 }, using: &random)
    var kind = 0
    for (weight, candidate) in weights {
      if pick < weight {
        kind = candidate
        break
      }
      pick -= weight
    }
    switch kind {
    case 0:
      return .open(
        Spelling.allCases[Int.random(in: 0..<3, using: &random)],
        readOnly: Int.random(in: 0..<5, using: &random) == 0,
        normalDurability: Bool.random(using: &random))
    case 1: return .release(index())
    case 2:
      return .write(
        index(), rosterAction(withLogoutAll: true), WriteMode.allCases[Int.random(in: 0..<3, using: &random)])
    case 3: return .shell(rosterAction())
    case 4: return .python(rosterAction())
    case 5: return .sessionctl(rosterAction(withLogoutAll: true))
    case 6:
      let compaction: Compaction
      switch Int.random(in: 0..<4, using: &random) {
      case 0: compaction = .before(back: Int.random(in: 0...4, using: &random))
      case 1:
        compaction = .olderThan(milliseconds: [0, 300, 1000, 3000][Int.random(in: 0..<4, using: &random)])
      default: compaction = .keepingLast(Int.random(in: 0...4, using: &random))
      }
      return .compact(index(), compaction)
    case 7: return .subscribe(index(), Subscription.allCases[Int.random(in: 0..<5, using: &random)])
    case 8: return .cancel(index())
    case 9: return .resume(index())
    case 10: return .startChildSubscriber
    case 11: return .stopChildSubscriber(index())
    case 12:
      return .crashWriter(
        writes: Int.random(in: 1...40, using: &random), instances: Int.random(in: 1...2, using: &random),
        microseconds: Int.random(in: 0..<15_000, using: &random))
    case 13:
      return .checkpoint(["PASSIVE", "FULL", "RESTART", "TRUNCATE"][Int.random(in: 0..<4, using: &random)])
    case 15: return .backup
    case 16: return .restore
    case 17: return .slowPython(action())
    case 18: return .tamper(index())
    case 19: return .replace(index())
    case 20: return .retention(index(), policy())
    case 21: return .shellRetention(policy())
    case 22:
      // sessionctl takes whole seconds.
      var policy = policy()
      policy.maxAgeMilliseconds = policy.maxAgeMilliseconds.map { max(1000, $0 / 1000 * 1000) }
      return .sessionctlRetention(policy)
    case 23:
      return .ioError(
        actions(1...4), when: Int.random(in: 1...5, using: &random), sticky: Bool.random(using: &random))
    case 24: return .liveWriter(actions(2...8), pauseMilliseconds: Int.random(in: 5...60, using: &random))
    case 25: return .snapshotsUnderLoad(index(), writes: Int.random(in: 10...40, using: &random))
    case 26: return .quietWriter
    case 27:
      return .killedAtSync(
        writes: Int.random(in: 1...8, using: &random), when: Int.random(in: 1...8, using: &random))
    default: return .settle
    }
  }
}

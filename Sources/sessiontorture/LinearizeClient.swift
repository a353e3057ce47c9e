import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// Runs `sessionctl --json` for the `linearize` scenario, one whole process per operation,
/// and reads what it printed into a ``Linearizability/Operation``.
struct LinearizeClient: Sendable {
  let sessionctl: String
  let database: String
  /// A directory for the children's `HOME` and standard error.
  let scratch: String
  /// The state of the store when the round's clients start: `history` reads after its cursor.
  var initial = Linearizability.State(accounts: [:], active: nil, head: 0)

  /// What one operation gave.
  struct Outcome: Sendable {
    var operation: Linearizability.Operation
    /// Killed by the driver before it answered.
    var killed: Bool
    /// What went wrong besides a kill: a failure, an answer that cannot be read.
    var problem: String?
    /// The change lines it printed: a write's change, `history`'s entries.
    var changes: [String]
    /// For `history`: the cursor its entries follow.
    var since: Int64

    /// Problems of its change lines against the log read at the end: an acknowledged
    /// change is there byte for byte; `history` printed the log's entries in order, from
    /// the one after `since`, without a hole.
    func entries(against log: [Int64: String]) -> [String] {
      guard !killed, problem == nil else { return [] }
      let name = "c\(operation.client) \(operation.call)"
      switch operation.call {
      case .history:
        for (offset, line) in changes.enumerated() {
          let cursor = since + 1 + Int64(offset)
          if log[cursor] != line {
            return [
              "\(name): entry \(offset + 1) after \(since) is \(line), the log has \(log[cursor] ?? "nothing")"
            ]
          }
        }
        return []
      case .status: return []
      default:
        let acknowledged: [Linearizability.Change]
        switch operation.response {
        case .change(let change): acknowledged = [change]
        case .changes(let changes): acknowledged = changes
        default: return []
        }
        return zip(acknowledged, changes).compactMap { change, line in
          log[change.cursor] == line
            ? nil
            : "\(name): the change it acknowledged, \(line), is in the log as \(log[change.cursor] ?? "nothing")"
        }
      }
    }
  }

  /// The environment of every child: nothing of the driver's but what is named here.
  var environment: [String: String] { ["PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": scratch] }

  /// Starts `sessionctl --db DATABASE --json ARGUMENTS`; the hang limit kills it if the driver gives up.
  func spawn(_ arguments: [String], stderr: String) throws -> ChildProcess {
    let child = try ChildProcess(
      sessionctl, ["--db", database, "--json"] + arguments, environment: environment, stdout: .collected(),
      stderr: .file(stderr))
    ChaosWatchdog.shared.track(child.pid)
    return child
  }

  /// Waits for a child of ``spawn(_:stderr:)`` to end; its status.
  @discardableResult
  func reap(_ child: ChildProcess) -> Int32 {
    let status = child.wait()
    ChaosWatchdog.shared.untrack(child.pid)
    return status
  }

  /// The first line of what a child printed on standard error.
  func firstLine(of file: String) -> String {
    let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").first.map(String.init) ?? "(nothing on stderr)"
  }

  /// Runs `call` as client `number`; with `killAfter` (ns), sends SIGKILL that long after
  /// the start unless it ended. The call time is taken before the process starts and the
  /// return time after it was reaped: the real operation lies within.
  func perform(_ call: Linearizability.Call, number: Int, killAfter: UInt64?) throws -> Outcome {
    let arguments = call == .history ? ["history", "--since", String(initial.head)] : call.arguments
    let stderr = scratch + "/client\(number).stderr"
    let start = Monotonic.now()
    let child = try spawn(arguments, stderr: stderr)
    if let killAfter, child.status(within: .nanoseconds(Int64(killAfter))) == nil { child.kill(SIGKILL) }
    let status = reap(child)
    let end = Monotonic.now()
    var outcome = Outcome(
      operation: .init(client: number, call: call, start: start, end: nil, response: .unknown), killed: false,
      problem: nil, changes: [], since: initial.head)
    if child.termination == .signalled(SIGKILL) && killAfter != nil {
      outcome.killed = true
      return outcome
    }
    if Self.isRefusal(status: status, firstLine(of: stderr)), call.isWrite, child.lines.isEmpty {
      // Refused, nothing written: a name no account has or another account holds (exit
      // 65), or a full roster (1).
      outcome.operation.response = .refused
      outcome.operation.end = end
      return outcome
    }
    guard status == 0 else {
      outcome.problem = "c\(number) \(call) exited with \(status): \(firstLine(of: stderr))"
      return outcome
    }
    do {
      (outcome.operation.response, outcome.changes) = try read(call, child.lines)
      outcome.operation.end = end
    } catch {
      outcome.problem = "c\(number) \(call): \(error)"
    }
    return outcome
  }

  /// The response `lines` give for `call`, and the change lines among them.
  func read(_ call: Linearizability.Call, _ lines: [String]) throws -> (Linearizability.Response, [String]) {
    switch call {
    case .login, .logout, .rename, .logoutAccount, .logoutAll, .renameAccount, .switchTo, .remove:
      guard let first = lines.first, let object = JSONLines.object(first), JSONLines.cursor(object) != nil
      else {
        throw TortureFailure("unreadable answer \(lines)")
      }
      if object["type"] as? String == "noChange", lines.count == 1, let cursor = JSONLines.cursor(object),
        let state = JSONLines.values(object["state"])
      {
        return (.noChange(cursor: cursor, state: state), [])
      }
      // One change line, or one for each account a logout of every account signs out.
      guard call == .logoutAll || lines.count == 1 else { throw TortureFailure("unreadable answer \(lines)") }
      var changes: [Linearizability.Change] = []
      for line in lines {
        // Decoded as the library reads a change line too: its events must be the ones
        // between its states and flags.
        guard let change = JSONLines.object(line).flatMap(JSONLines.change),
          (try? JSONDecoder().decode(SessionEntry.self, from: Data(line.utf8))) != nil
        else { throw TortureFailure("unreadable answer \(line)") }
        changes.append(change)
      }
      return (call == .logoutAll ? .changes(changes) : .change(changes[0]), lines)
    case .status:
      guard lines.count == 1, let object = JSONLines.object(lines[0]), let cursor = JSONLines.cursor(object),
        let state = JSONLines.values(object)
      else { throw TortureFailure("unreadable answer \(lines)") }
      return (.observed(cursor: cursor, state: state), [])
    case .history:
      // The active state its entries lead to from the round's start.
      var state = initial
      for line in lines {
        guard let object = JSONLines.object(line), let change = JSONLines.change(object) else {
          throw TortureFailure("unreadable entry \(line)")
        }
        state = state.applying(change)
      }
      return (.observed(cursor: state.head, state: state.values), lines)
    }
  }

  /// Whether `message` (sessionctl's line on stderr) says a write was refused by the rules:
  /// a name no account has ("no account is named"), a name another account holds ("an
  /// account is named", "another account is named"), or a roster at its limit.
  static func isRefusal(status: Int32, _ message: String) -> Bool {
    (status == 65 && message.contains("is named '"))
      || (status == 1 && message.contains("accounts, its limit"))
  }

  /// The whole log, read by one `history` once the clients are done: each entry's line by cursor.
  func log() throws -> [Int64: String] {
    let stderr = scratch + "/log.stderr"
    let child = try spawn(["history"], stderr: stderr)
    let status = reap(child)
    guard status == 0 else { throw TortureFailure("history exited with \(status): \(firstLine(of: stderr))") }
    var log: [Int64: String] = [:]
    for line in child.lines {
      guard let object = JSONLines.object(line), let cursor = JSONLines.cursor(object) else {
        throw TortureFailure("history printed an unreadable line: \(line)")
      }
      log[cursor] = line
    }
    return log
  }
}

/// Reading `sessionctl --json` lines.
enum JSONLines {
  /// The object a line holds, or nil.
  static func object(_ line: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
  }

  /// Its `"cursor"`.
  static func cursor(_ object: [String: Any]) -> Int64? { (object["cursor"] as? NSNumber)?.int64Value }

  /// The username and login state of a state object.
  static func values(_ value: Any?) -> Linearizability.Values? {
    guard let object = value as? [String: Any], let isLoggedIn = object["isLoggedIn"] as? Bool else {
      return nil
    }
    let username = object["username"]
    guard username is NSNull || username is String else { return nil }
    return .init(username: username as? String, isLoggedIn: isLoggedIn)
  }

  /// The change a change line holds: cursor, account, before, after and active flags.
  static func change(_ object: [String: Any]) -> Linearizability.Change? {
    guard object["type"] as? String == "change", let cursor = cursor(object),
      let account = (object["account"] as? NSNumber)?.int64Value, let before = values(object["before"]),
      let after = values(object["after"]), let wasActive = object["wasActive"] as? Bool,
      let isActive = object["isActive"] as? Bool
    else { return nil }
    return .init(
      cursor: cursor, account: account, before: before, after: after, wasActive: wasActive, isActive: isActive
    )
  }
}

import Foundation
import SessionStorage

/// A linearizability checker for the roster as `sessionctl --json` shows it: a history of
/// concurrent operations, each with its call and return time and the response it printed,
/// is searched for one sequential order that respects real time (an operation that returned
/// before another was called comes first) and in which every response is exactly what the
/// sequential model answers at that point (Wing and Gong's search, with the memo of
/// porcupine and Knossos: a set of linearized operations and a model state seen once is
/// never explored again).
///
/// An operation whose outcome is unknown (its process was killed, or it failed) has no
/// return: it may take effect at any time after its call, or never.
enum Linearizability {
  /// The values a response shows of an account (or of the active one): who, and whether
  /// signed in; no username for none.
  struct Values: Hashable, Sendable, CustomStringConvertible {
    var username: String?
    var isLoggedIn: Bool

    var description: String { "\(username.map { "'\($0)'" } ?? "nil")/\(isLoggedIn ? "in" : "out")" }

    /// No account.
    static let none = Values(username: nil, isLoggedIn: false)
  }

  /// The sequential model's state: the roster (accounts by identifier, the active one, the
  /// identifier the next account gets) and the head cursor.
  struct State: Hashable, Sendable, CustomStringConvertible {
    var accounts: [Int64: Values]
    var active: Int64?
    var nextID: Int64
    var head: Int64

    init(accounts: [Int64: Values], active: Int64?, nextID: Int64? = nil, head: Int64) {
      self.accounts = accounts
      self.active = active
      self.nextID = nextID ?? ((accounts.keys.max() ?? 0) + 1)
      self.head = head
    }

    /// The active account's values (what `status` shows), no username when none is active.
    var values: Values { active.flatMap { accounts[$0] } ?? .none }

    /// The account with this username, with its identifier.
    func account(named name: String) -> (id: Int64, values: Values)? {
      accounts.first { $0.value.username == name }.map { ($0.key, $0.value) }
    }

    /// The state after a change line's account, values and active flags at `cursor`.
    func applying(cursor: Int64, account: Int64, after: Values, isActive: Bool, wasActive: Bool) -> State {
      var next = self
      next.accounts[account] = after.username == nil ? nil : after
      next.nextID = max(nextID, account + 1)
      if isActive {
        next.active = account
      } else if wasActive {
        next.active = nil
      }
      next.head = cursor
      return next
    }

    /// The state after `change`.
    func applying(_ change: Change) -> State {
      applying(
        cursor: change.cursor, account: change.account, after: change.after, isActive: change.isActive,
        wasActive: change.wasActive)
    }

    var description: String {
      "\(values)@\(head) (\(accounts.count) account\(accounts.count == 1 ? "" : "s"), active "
        + "\(active.map(String.init) ?? "none"))"
    }
  }

  /// What a client asks.
  enum Call: Hashable, Sendable, CustomStringConvertible {
    /// `login NAME`, `logout` (the active account), `rename NEW` (the active account).
    case login(String), logout, rename(String)
    /// `logout NAME`: that account, active or not.
    case logoutAccount(String)
    /// `logout --all`: every signed-in account, one change each.
    case logoutAll
    /// `rename --account OLD NEW`: that account, active or not.
    case renameAccount(String, to: String)
    /// `switch NAME`: that account becomes the active one.
    case switchTo(String)
    /// `remove NAME`: that account leaves the roster.
    case remove(String)
    /// `status`: the active account's state and the head cursor, read at once.
    case status
    /// `history` from the round's start: its last entry's cursor, and the active state its
    /// entries lead to.
    case history

    var description: String { arguments.joined(separator: " ") }

    /// The `sessionctl` command line for it.
    var arguments: [String] {
      switch self {
      case .login(let name): ["login", name]
      case .logout: ["logout"]
      case .rename(let name): ["rename", name]
      case .logoutAccount(let name): ["logout", name]
      case .logoutAll: ["logout", "--all"]
      case .renameAccount(let old, let new): ["rename", "--account", old, new]
      case .switchTo(let name): ["switch", name]
      case .remove(let name): ["remove", name]
      case .status: ["status"]
      case .history: ["history"]
      }
    }

    var isWrite: Bool {
      switch self {
      case .login, .logout, .rename, .logoutAccount, .logoutAll, .renameAccount, .switchTo, .remove: true
      case .status, .history: false
      }
    }
  }

  /// One change of one account, as a write's answer shows it.
  struct Change: Hashable, Sendable, CustomStringConvertible {
    var cursor: Int64
    var account: Int64
    var before: Values
    var after: Values
    var wasActive: Bool
    var isActive: Bool

    var description: String {
      "\(cursor) #\(account) \(before)→\(after)\(wasActive == isActive ? "" : isActive ? " activated" : " deactivated")"
    }
  }

  /// What the client was answered.
  enum Response: Hashable, Sendable, CustomStringConvertible {
    /// A write's change.
    case change(Change)
    /// The changes of a logout of every account: one per account it signed out, in the
    /// order of their identifiers, at consecutive cursors, committed at once.
    case changes([Change])
    /// A write that changed nothing, with the state and cursor it shows.
    case noChange(cursor: Int64, state: Values)
    /// A write refused (no account has the name it names, another account holds the name
    /// it gives, or the roster is full): nothing written.
    case refused
    /// A read: the state and cursor it shows.
    case observed(cursor: Int64, state: Values)
    /// No answer (killed, failed): any outcome, at any time after the call, or none.
    case unknown
    /// No answer, and what the write did is in the log: the changes it made are among
    /// `unclaimed` (by cursor), the entries of the log that no answer claims, each exactly
    /// as the log holds it, at any time after the call; or it made none.
    case unanswered(unclaimed: [Int64: Change])

    var description: String {
      switch self {
      case .change(let change): "change \(change)"
      case .changes(let changes): "changes [\(changes.map(\.description).joined(separator: "; "))]"
      case .noChange(let cursor, let state): "noChange \(state)@\(cursor)"
      case .refused: "refused"
      case .observed(let cursor, let state): "\(state)@\(cursor)"
      case .unknown: "unknown"
      case .unanswered(let unclaimed):
        "unanswered (unclaimed: \(unclaimed.keys.sorted().map(String.init).joined(separator: ", ")))"
      }
    }

    /// Whether an operation answered this may have been answered `expected`, the model's
    /// response: the same response; anything for an unknown; for a write unanswered, a
    /// change (or changes) that the log holds at cursors no answer claims. A write
    /// unanswered that changes nothing is left out of the order instead: that is the same.
    func admits(_ expected: Response) -> Bool {
      switch self {
      case .unknown: return true
      case .unanswered(let unclaimed):
        switch expected {
        case .change(let change): return unclaimed[change.cursor] == change
        case .changes(let changes): return changes.allSatisfy { unclaimed[$0.cursor] == $0 }
        default: return false
        }
      default: return self == expected
      }
    }
  }

  /// One operation of a history.
  struct Operation: Sendable, CustomStringConvertible {
    /// Which client made it (for the report).
    var client: Int
    var call: Call
    /// When it was called, and when its answer was complete (nil: never), in ns of one clock.
    var start: UInt64
    var end: UInt64?
    var response: Response

    var description: String { described(from: 0) }

    /// The operation with its times in ms after `origin` (ns).
    func described(from origin: UInt64) -> String {
      func ms(_ time: UInt64) -> String {
        String(format: "%.1f", Double(Int64(bitPattern: time &- origin)) / 1e6)
      }
      return "c\(client) [\(ms(start)), \(end.map(ms) ?? "∞")] ms \(call) → \(response)"
    }
  }

  /// The sequential model, the library's rules (`SessionWrite.plan`): what `call` answers in
  /// `state`, and the state after it.
  ///
  /// - A login signs in the account of that name and makes it active, or adds a new one,
  ///   signed in and active.
  /// - A logout signs out the active account (none active: no change); a logout of a named
  ///   account signs it out, active or not, and it stays as active as it was; a logout of
  ///   every account signs out each signed-in one, in the order of their identifiers, one
  ///   change each at consecutive cursors (nobody signed in: no change).
  /// - A rename renames the active account, or adds the name, signed out and active, when
  ///   none is; a rename of a named account renames it, active or not, and its own name
  ///   changes nothing.
  /// - A switch makes the named account active and changes no login state: one change, of
  ///   the account switched to (to the active account: no change).
  /// - A removal takes the named account out of the roster, signed in or not, in one
  ///   change; when it was the active one, none is active after it.
  ///
  /// Refused: a name no account has, for a write that names an account (logout, rename
  /// `--account`, switch, removal); a new name another account holds; a new account past
  /// the roster's limit.
  static func step(_ call: Call, _ state: State) -> (response: Response, next: State) {
    let unchanged = (Response.noChange(cursor: state.head, state: state.values), state)
    func write(_ account: Int64, before: Values, after: Values, isActive: Bool) -> (Response, State) {
      let wasActive = account == state.active
      if before == after, wasActive == isActive { return unchanged }
      let change = Change(
        cursor: state.head + 1, account: account, before: before, after: after, wasActive: wasActive,
        isActive: isActive)
      return (.change(change), state.applying(change))
    }
    func join(_ name: String, isLoggedIn: Bool) -> (Response, State) {
      guard state.accounts.count < SessionRoster.limit else { return (.refused, state) }
      return write(
        state.nextID, before: .none, after: Values(username: name, isLoggedIn: isLoggedIn), isActive: true)
    }
    /// Signs out `account`, leaving it as active as it is.
    func logOut(_ account: (id: Int64, values: Values)) -> (Response, State) {
      write(
        account.id, before: account.values,
        after: Values(username: account.values.username, isLoggedIn: false),
        isActive: account.id == state.active)
    }
    /// Renames `account` to `name` unless another account holds it.
    func rename(_ account: (id: Int64, values: Values), to name: String) -> (Response, State) {
      if let holder = state.account(named: name), holder.id != account.id { return (.refused, state) }
      return write(
        account.id, before: account.values,
        after: Values(username: name, isLoggedIn: account.values.isLoggedIn),
        isActive: account.id == state.active)
    }
    let active = state.active.flatMap { id in state.accounts[id].map { (id: id, values: $0) } }
    switch call {
    case .status, .history: return (.observed(cursor: state.head, state: state.values), state)
    case .login(let name):
      guard let (id, values) = state.account(named: name) else { return join(name, isLoggedIn: true) }
      return write(id, before: values, after: Values(username: name, isLoggedIn: true), isActive: true)
    case .logout:
      guard let active else { return unchanged }
      return logOut(active)
    case .logoutAccount(let name):
      guard let named = state.account(named: name) else { return (.refused, state) }
      return logOut(named)
    case .logoutAll:
      var next = state
      var changes: [Change] = []
      for id in state.accounts.keys.sorted() {
        guard let values = state.accounts[id], values.isLoggedIn else { continue }
        let isActive = id == state.active
        let change = Change(
          cursor: next.head + 1, account: id, before: values,
          after: Values(username: values.username, isLoggedIn: false), wasActive: isActive, isActive: isActive
        )
        changes.append(change)
        next = next.applying(change)
      }
      return changes.isEmpty ? unchanged : (.changes(changes), next)
    case .rename(let name):
      guard let active else {
        return state.account(named: name) == nil ? join(name, isLoggedIn: false) : (.refused, state)
      }
      return rename(active, to: name)
    case .renameAccount(let old, let name):
      guard let named = state.account(named: old) else { return (.refused, state) }
      return rename(named, to: name)
    case .switchTo(let name):
      guard let (id, values) = state.account(named: name) else { return (.refused, state) }
      return write(id, before: values, after: values, isActive: true)
    case .remove(let name):
      guard let (id, values) = state.account(named: name) else { return (.refused, state) }
      return write(id, before: values, after: .none, isActive: false)
    }
  }

  /// What a check found: nil when a linearization exists.
  struct Violation: Error, CustomStringConvertible {
    /// The longest order found that explains a prefix of the history, with the state after each.
    var longest: [(operation: Operation, after: State)]
    /// The operations none of which could come next: among them, the first to return.
    var stuck: [Operation]
    /// True when the search gave up at its step limit instead of exhausting the orders.
    var gaveUp: Bool
    /// The first call's time: the report's times count from it.
    var origin: UInt64

    var description: String {
      var lines = [
        gaveUp
          ? "the search gave up at its step limit" : "no order of the operations explains every response"
      ]
      lines.append("longest explained order (\(longest.count) operations), its last steps:")
      for (operation, after) in longest.suffix(8) {
        lines.append("  \(operation.described(from: origin))  ⇒ \(after)")
      }
      lines.append("then none of these can come next (the first must, before it returned):")
      for operation in stuck.prefix(12) { lines.append("  \(operation.described(from: origin))") }
      return lines.joined(separator: "\n")
    }
  }

  /// A node of the search's list: an operation's call or return, in time order.
  private struct Event {
    var operation: Int
    var isCall: Bool
    /// The operation's return event, for a call (nil when it never returned).
    var match: Int?
    var previous: Int
    var next: Int
  }

  /// Checks `operations` against the model from `initial`; throws the ``Violation`` found.
  /// - Parameter limit: how many search steps at most (a bound on time for large histories).
  static func check(_ operations: [Operation], from initial: State, limit: Int = 20_000_000) throws(Violation)
  {
    // Events in time order; a call before a return at the same instant (they overlap).
    var order: [(time: UInt64, operation: Int, isCall: Bool)] = []
    for (index, operation) in operations.enumerated() {
      order.append((operation.start, index, true))
      if let end = operation.end { order.append((end, index, false)) }
    }
    order.sort { ($0.time, $0.isCall ? 0 : 1, $0.operation) < ($1.time, $1.isCall ? 0 : 1, $1.operation) }
    // Node 0 is the list's head sentinel; events are nodes 1...n.
    var events = [Event(operation: -1, isCall: false, match: nil, previous: -1, next: order.isEmpty ? -1 : 1)]
    var returnNode = [Int?](repeating: nil, count: operations.count)
    for (position, event) in order.enumerated() {
      let node = position + 1
      events.append(
        Event(
          operation: event.operation, isCall: event.isCall, match: nil, previous: node - 1,
          next: node == order.count ? -1 : node + 1))
      if !event.isCall { returnNode[event.operation] = node }
    }
    for node in events.indices.dropFirst() where events[node].isCall {
      events[node].match = returnNode[events[node].operation]
    }
    var remainingReturns = operations.count(where: { $0.end != nil })

    func unlink(_ node: Int) {
      let (previous, next) = (events[node].previous, events[node].next)
      events[previous].next = next
      if next >= 0 { events[next].previous = previous }
    }
    func relink(_ node: Int) {
      let (previous, next) = (events[node].previous, events[node].next)
      events[previous].next = node
      if next >= 0 { events[next].previous = node }
    }

    struct Key: Hashable {
      var linearized: [UInt64]
      var state: State
    }
    var linearized = [UInt64](repeating: 0, count: (operations.count + 63) / 64)
    var seen = Set<Key>()
    var stack: [(node: Int, before: State)] = []
    var state = initial
    var best: [(node: Int, before: State)] = []
    var bestStuck = -1
    var steps = 0
    var node = events[0].next
    while remainingReturns > 0 {
      steps += 1
      if steps > limit { throw violation(operations, best, bestStuck, initial, gaveUp: true, events) }
      guard node >= 0 else { break }  // unreachable: a return always precedes the end
      let event = events[node]
      if event.isCall {
        let operation = operations[event.operation]
        let (expected, next) = step(operation.call, state)
        var candidate = linearized
        candidate[event.operation / 64] |= 1 << UInt64(event.operation % 64)
        if operation.response.admits(expected)
          && seen.insert(Key(linearized: candidate, state: next)).inserted
        {
          stack.append((node, state))
          linearized = candidate
          state = next
          unlink(node)
          if let match = event.match {
            unlink(match)
            remainingReturns -= 1
          }
          node = events[0].next
        } else {
          node = event.next
        }
      } else {
        // This operation returned before any remaining one could come next: undo the last choice.
        if stack.count > best.count || (stack.count == best.count && bestStuck < 0) {
          best = stack
          bestStuck = node
        }
        guard let (undone, before) = stack.popLast().map({ ($0.node, $0.before) }) else {
          throw violation(operations, best, bestStuck, initial, gaveUp: false, events)
        }
        let undoneEvent = events[undone]
        if let match = undoneEvent.match {
          relink(match)
          remainingReturns += 1
        }
        relink(undone)
        linearized[undoneEvent.operation / 64] &= ~(1 << UInt64(undoneEvent.operation % 64))
        state = before
        node = undoneEvent.next
      }
    }
  }

  /// The report of a failed search: the longest explained order, and the operations that
  /// were pending where it stopped (the one that returned first, then those overlapping it).
  private static func violation(
    _ operations: [Operation], _ best: [(node: Int, before: State)], _ stuck: Int, _ initial: State,
    gaveUp: Bool, _ events: [Event]
  ) -> Violation {
    var state = initial
    let longest = best.map { choice -> (operation: Operation, after: State) in
      let operation = operations[events[choice.node].operation]
      state = step(operation.call, choice.before).next
      return (operation, state)
    }
    let done = Set(best.map { events[$0.node].operation })
    var pending: [Operation] = []
    if stuck >= 0 {
      let first = operations[events[stuck].operation]
      pending.append(first)
      let deadline = first.end ?? .max
      for (index, operation) in operations.enumerated()
      where !done.contains(index) && index != events[stuck].operation && operation.start <= deadline {
        pending.append(operation)
      }
    }
    return Violation(
      longest: longest, stuck: pending, gaveUp: gaveUp, origin: operations.map(\.start).min() ?? 0)
  }
}

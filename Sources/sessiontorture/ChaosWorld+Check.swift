import FeedKit
import Foundation
import SessionStorage
import ToolingKit

/// The check after every step: the file read by a fresh process, every instance and every
/// follower of the feed, each against the model.
extension ChaosWorld {
  /// Reads the file with a fresh process and compares it with the model, the instances
  /// and the followers. Returns the problems; a check that cannot run is one.
  func check() -> [String] {
    do {
      try takeUnacknowledgedIfItAppeared()
      var problems = try compareFile()
      problems += compareInstances()
      if let store = instances.first {
        problems += try store.check().filter { $0.verdict == .failed }.map {
          "check \($0.check): \($0.detail)"
        }
      }
      problems += catchUp()
      return problems
    } catch {
      return ["the check could not run: \(error)"]
    }
  }

  /// The store as a fresh sqlite3 (or psql) process reads it: integrity, the state, the
  /// head, the oldest cursor and the row count (no hole), the policy, and the rows not
  /// compared yet (all of them every 50 checks and after a restore), against the model.
  private func compareFile() throws -> [String] {
    checks += 1
    if checks % 50 == 0 { verifiedThrough = 0 }
    let output = try backend.shell(
      path,
      [
        // PostgreSQL checks its pages itself; a store there has no retention policy.
        backend.isPostgres ? "SELECT 'ok'" : "PRAGMA quick_check",
        "SELECT \(backend.sessionColumns) FROM session",
        backend.headSQL,
        "SELECT coalesce(CAST(min(seq) AS TEXT), '') || '|' || count(*) FROM session_changes",
        backend.isPostgres
          ? "SELECT '|'"
          : "SELECT coalesce(keep_last, '') || '|' || coalesce(max_age_ms, '') FROM session_retention WHERE id = 1",
        // The roster: `id|username|flag|time|cursor` for each account, `;`-separated, and the
        // active id.
        backend.isPostgres
          ? "SELECT '-'"
          : "SELECT coalesce(group_concat(id || '|' || quote(username) || '|' || is_logged_in || '|' || updated_at || '|' || seq, "
            + "';'), '') FROM (SELECT * FROM accounts ORDER BY id)",
        backend.isPostgres
          ? "SELECT '-'" : "SELECT coalesce(account_id, '') FROM active_account WHERE id = 1",
        "SELECT \(backend.rowColumns) FROM session_changes WHERE seq > \(verifiedThrough) ORDER BY seq",
      ]
    ).split(separator: "\n", omittingEmptySubsequences: false)
    guard output.count >= 7, output[0] == "ok" else { return ["quick_check: \(output.first ?? "no answer")"] }
    var problems: [String] = []
    let stateFields = output[1].split(separator: "|", omittingEmptySubsequences: false)
    guard stateFields.count == 3, let username = Self.quoted(stateFields[0]),
      let updatedAt = Self.milliseconds(stateFields[2]), let head = Int64(output[2])
    else { return ["unreadable session row or head: \(output.prefix(3))"] }
    let state = ChaosState(username: username, isLoggedIn: stateFields[1] == "1", updatedAt: updatedAt)
    if model.state.updatedAt == ChaosState.unknown { model.learn(time: updatedAt, at: model.stateTimeFrom) }
    if !state.agrees(with: model.state) {
      problems.append("a fresh process reads the session \(state), the model \(model.state)")
    }
    if output[5] != "-" { problems += compareRoster(output[5], active: output[6]) }
    if head != model.head {
      problems.append("a fresh process reads the head \(head), the model \(model.head)")
    }
    let extent = output[3].split(separator: "|", omittingEmptySubsequences: false)
    let oldest = extent.first.flatMap { Int64($0) }
    let count = extent.count == 2 ? Int64(extent[1]) : nil
    let first = oldest ?? (head + 1)
    if let count, count != head - first + 1 {
      problems.append("\(count) rows from \(first) to \(head): a hole")
    }
    if let problem = model.learn(firstAvailable: first, at: Monotonic.now()) { problems.append(problem) }
    let policyFields = output[4].split(separator: "|", omittingEmptySubsequences: false)
    let policy = ChaosPolicy(
      keepLast: policyFields.first.flatMap { Int($0) },
      maxAgeMilliseconds: policyFields.last.flatMap { Int64($0) })
    if policy != model.policy {
      problems.append("the file's retention is \(policy), the model's \(model.policy)")
    }
    for line in output.dropFirst(7) where !line.isEmpty {
      guard let row = Self.row(line) else {
        problems.append("unreadable row '\(line)'")
        continue
      }
      guard row.cursor <= model.head, model.log[row.cursor] != nil else {
        problems.append(
          "the file holds \(row.cursor) (\(row.before) → \(row.after)), which no write the model knows made")
        continue
      }
      model.learn(from: row)
      if let entry = model.log[row.cursor], let difference = entry.difference(from: row) {
        problems.append("the file holds \(row.cursor) with \(difference)")
      }
    }
    if problems.isEmpty { verifiedThrough = model.head }
    return problems
  }

  /// The file's accounts (`id|username|flag|time|cursor`, `;`-separated) and active id against the
  /// model's roster.
  private func compareRoster(_ accounts: Substring, active: Substring) -> [String] {
    var found: [Int64: ChaosAccount] = [:]
    for account in accounts.split(separator: ";") {
      let fields = account.split(separator: "|", omittingEmptySubsequences: false)
      guard fields.count == 5, let id = Int64(fields[0]), let username = Self.quoted(fields[1]) ?? nil,
        let time = Self.milliseconds(fields[3]), let cursor = Int64(fields[4])
      else { return ["unreadable account '\(account)'"] }
      found[id] = ChaosAccount(
        username: username, isLoggedIn: fields[2] == "1", updatedAt: time, cursor: cursor)
    }
    for (id, file) in found {
      if let cursor = model.accounts[id]?.cursor { model.learn(time: file.updatedAt, at: cursor) }
    }
    return compare(found, active: Int64(active), as: "the file")
  }

  /// `accounts` and `active` (a roster read by `reader`) against the model's roster.
  private func compare(_ accounts: [Int64: ChaosAccount], active: Int64?, as reader: String) -> [String] {
    var problems: [String] = []
    for id in Set(accounts.keys).union(model.accounts.keys).sorted() {
      let (found, expected) = (accounts[id], model.accounts[id])
      let agrees =
        switch (found, expected) {
        case (nil, nil): true
        case (let found?, let expected?):
          expected.state.agrees(with: found.state) && found.cursor == expected.cursor
        default: false
        }
      if !agrees {
        problems.append(
          "\(reader) holds account \(id) as \(found.map { "\($0.state) at \($0.cursor)" } ?? "nothing"), the "
            + "model as \(expected.map { "\($0.state) at \($0.cursor)" } ?? "nothing")")
      }
    }
    if active != model.activeID {
      problems.append(
        "\(reader)'s active account is \(active.map(String.init) ?? "none"), the model's "
          + (model.activeID.map(String.init) ?? "none"))
    }
    return problems
  }

  /// Every instance reads what the model holds: state, bounds, retention.
  private func compareInstances() -> [String] {
    var problems: [String] = []
    let oldest = model.firstAvailable <= model.head ? model.firstAvailable : nil
    for (index, store) in instances.enumerated() {
      do {
        let state = ChaosState(try store.state)
        if !state.agrees(with: model.state) {
          problems.append("instance #\(index) reads \(state), the model \(model.state)")
        }
        let roster = try store.roster()
        let accounts = roster.accounts.map { account in
          (
            account.id.value,
            ChaosAccount(
              username: account.username, isLoggedIn: account.isLoggedIn,
              updatedAt: ChaosClock.milliseconds(account.updatedAt), cursor: account.cursor.value)
          )
        }
        problems += compare(
          Dictionary(accounts) { first, _ in first }, active: roster.activeID?.value, as: "instance #\(index)"
        )
        let bounds = try store.bounds()
        if bounds.head.value != model.head || bounds.oldest?.value != oldest {
          problems.append(
            "instance #\(index) has bounds \(bounds.oldest.map(\.description) ?? "-")…\(bounds.head), the model "
              + "\(oldest.map(String.init) ?? "-")…\(model.head)")
        }
        let policy = try store.file.map { ChaosPolicy(try $0.retention()) } ?? .off
        if policy != model.policy {
          problems.append("instance #\(index) has retention \(policy), the model \(model.policy)")
        }
      } catch {
        problems.append("instance #\(index) cannot read: \(error)")
      }
    }
    return problems
  }

  /// Verifies what every follower delivered, and waits until each live one is where the
  /// model is — at the head, or ended where the model says it must end — each within the
  /// bound after what it waits for became readable. Returns the problems.
  func catchUp() -> [String] {
    var problems = followers.compactMap(\.polling)
    while true {
      for follower in followers { problems += follower.verify(&model, bound: bound) }
      guard problems.isEmpty else { return problems }
      let pending = followers.compactMap { $0.requirement(model, bound: bound) }
      if pending.isEmpty { return [] }
      let now = Monotonic.now()
      let late = pending.filter { now > $0.deadline }
      if !late.isEmpty {
        return late.map { "\($0.what) within \(ChaosFollower.milliseconds(bound)) ms" }
      }
      usleep(500)
    }
  }
}

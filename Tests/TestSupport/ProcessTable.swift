import Foundation

/// The machine's processes as `/proc` lists them: for tests that check which processes a
/// program left behind.
public enum ProcessTable {
  /// The pid, parent pid and state letter of a process (`R`, `S`, `Z` for a zombie…), nil
  /// when there is none with that pid.
  public static func entry(_ pid: pid_t) -> (parent: pid_t, state: Character)? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return nil }
    // After "PID (COMMAND) ": the state, then the parent's pid. COMMAND may hold spaces and ')'.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count >= 2, let state = fields[0].first, let parent = pid_t(fields[1]) else { return nil }
    return (parent, state)
  }

  /// Whether `pid` runs: it exists and is not a zombie (a process that ended and waits for
  /// its parent, or for an init that may never reap it, to collect its status).
  public static func isRunning(_ pid: pid_t) -> Bool {
    guard let entry = entry(pid) else { return false }
    return entry.state != "Z" && entry.state != "X"
  }

  /// The running processes whose parent is `pid`, and theirs, and so on.
  public static func descendants(of pid: pid_t) -> Set<pid_t> {
    let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
    var children: [pid_t: [pid_t]] = [:]
    for process in all where isRunning(process) {
      if let parent = entry(process)?.parent { children[parent, default: []].append(process) }
    }
    var found = Set<pid_t>()
    var pending = [pid]
    while let next = pending.popLast() {
      for child in children[next] ?? [] where found.insert(child).inserted { pending.append(child) }
    }
    return found
  }
}

import Foundation
import TestSupport
import Testing

/// A result nobody received is not a success: a command whose standard output is on a full
/// disk (`/dev/full`), closed (`>&-`), a file that cannot grow (`ulimit -f`), or (for
/// every command but `watch`) a pipe whose reader went away exits 74 and says why; a change
/// it committed stays committed, and the message says so. `watch --exec` stops at the first
/// line it cannot write, before running the command for another change.
@Suite(.timeLimit(.minutes(10))) struct OutputFailureTests {
  let dir: TemporaryDirectory
  let db: String

  init() throws {
    dir = try TemporaryDirectory()
    db = dir.file("s.db")
  }

  /// Where `sessionctl`'s standard output goes.
  enum Output: Equatable, CustomStringConvertible {
    /// `>/dev/full`: every write fails with `ENOSPC`.
    case full
    /// `>&-`: no descriptor 1 at all (`EBADF`).
    case closed
    /// A pipe whose read end was closed before `sessionctl` started (`EPIPE`).
    case readerGone
    /// Appended to the file at `path`, which may grow to `limit` bytes (`ulimit -f`,
    /// SIGXFSZ ignored: `EFBIG` once a write would pass the limit).
    case file(String, limit: Int)

    var description: String {
      switch self {
      case .full: "full"
      case .closed: "closed"
      case .readerGone: "readerGone"
      case .file(_, let limit): "file limited to \(limit) bytes"
      }
    }

    /// The launcher: a Python program that sets descriptor 1 up, then runs the rest of
    /// its arguments.
    var launcher: [String] {
      let prepare =
        switch self {
        case .full: "fd = os.open('/dev/full', os.O_WRONLY); os.dup2(fd, 1)"
        case .closed: "os.close(1)"
        case .readerGone: "r, w = os.pipe(); os.close(r); os.dup2(w, 1)"
        case .file(let path, let limit):
          "fd = os.open(\(Self.python(path)), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644); os.dup2(fd, 1); "
            + "resource.setrlimit(resource.RLIMIT_FSIZE, (\(limit), \(limit))); "
            + "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)"
        }
      return [
        "/usr/bin/python3", "-c",
        "import os, sys, resource, signal; \(prepare); os.execv(sys.argv[1], sys.argv[1:])",
      ]
    }

    /// `text` as a Python string literal.
    static func python(_ text: String) -> String {
      "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// The words `strerror` gives for what a write to this output fails with.
    var reason: String {
      switch self {
      case .full: "No space left on device"
      case .closed: "Bad file descriptor"
      case .readerGone: "its reader went away: Broken pipe"
      case .file: "File too large"
      }
    }
  }

  /// Runs `sessionctl --db DB ARGUMENTS` with its standard output as `output`, in an
  /// environment of exactly `PATH`, `HOME` and `LC_ALL`, on a thread of its own.
  func sessionctl(_ output: Output, _ arguments: [String]) async throws -> ProcessResult {
    let line = output.launcher + [ProcessRunner.product("sessionctl"), "--db", db] + arguments
    return try await ProcessRunner.runDetached(
      "/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", "HOME=\(dir.path)", "LC_ALL=C.UTF-8"] + line)
  }

  /// `sessionctl --db DB ARGUMENTS` with a normal standard output; the test fails unless it exits 0.
  @discardableResult
  func succeeding(_ arguments: [String]) async throws -> String {
    let result = try await ProcessRunner.runDetached(
      "/usr/bin/env",
      [
        "-i", "PATH=/usr/bin:/bin", "HOME=\(dir.path)", "LC_ALL=C.UTF-8", ProcessRunner.product("sessionctl"),
        "--db", db,
      ]
        + arguments)
    #expect(result.status == 0, "\(arguments): \(result.stderr)")
    return result.stdout
  }

  /// The feed's rows as `cursor|new_username|new_is_logged_in`, read by the sqlite3 shell.
  func feed() async throws -> [String] {
    let result = try await ProcessRunner.runDetached(
      "/usr/bin/sqlite3",
      [db, "SELECT seq, new_username, new_is_logged_in FROM session_changes ORDER BY seq"])
    #expect(result.status == 0, "\(result.stderr)")
    return result.stdout.split(separator: "\n").map(String.init)
  }

  func expectFailure(
    _ result: ProcessResult, _ output: Output, committed: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(result.status == 74, "\(output): \(result.stderr)", sourceLocation: sourceLocation)
    #expect(
      result.stderr.hasPrefix(
        "sessionctl: error: the result could not be written to standard output (\(output.reason))"),
      "\(output): \(result.stderr)", sourceLocation: sourceLocation)
    if let committed {
      #expect(
        result.stderr.contains(committed), "\(output): \(result.stderr)", sourceLocation: sourceLocation)
    } else {
      #expect(
        !result.stderr.contains("committed"), "\(output): \(result.stderr)", sourceLocation: sourceLocation)
    }
    #expect(
      result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)",
      sourceLocation: sourceLocation)
  }

  /// Writes whose line cannot be delivered: each exits 74, says the change is committed (with
  /// its cursor), and the change is in the file; a write that changed nothing says nothing
  /// of a commit.
  @Test(arguments: [Output.full, .closed, .readerGone])
  func aWriteWhoseResultCannotBeWrittenFailsAndSaysItIsCommitted(output: Output) async throws {
    expectFailure(
      try await sessionctl(output, ["login", "alice"]), output,
      committed: "the change is committed all the same, at cursor 1")
    expectFailure(
      try await sessionctl(output, ["rename", "bob"]), output,
      committed: "the change is committed all the same, at cursor 2")
    expectFailure(
      try await sessionctl(output, ["--json", "logout"]), output,
      committed: "the change is committed all the same, at cursor 3")
    #expect(try await feed() == ["1|alice|1", "2|bob|1", "3|bob|0"])
    expectFailure(try await sessionctl(output, ["logout"]), output)  // no change: nothing committed
    #expect(try await feed().count == 3)
  }

  /// Administration whose report cannot be delivered: 74, and what was done is named.
  @Test(arguments: [Output.full, .closed, .readerGone])
  func administrationWhoseReportCannotBeWrittenSaysWhatItDid(output: Output) async throws {
    expectFailure(
      try await sessionctl(output, ["migrate"]), output,
      committed: "the migrations are committed all the same")
    for name in ["alice", "bob", "carol"] { try await succeeding(["login", name]) }
    let backup = dir.file("backup-\(output).db")
    expectFailure(
      try await sessionctl(output, ["backup", backup]), output,
      committed: "the backup is written all the same (\(backup), head 3)")
    #expect(FileManager.default.fileExists(atPath: backup))
    expectFailure(
      try await sessionctl(output, ["compact", "--keep", "1"]), output,
      committed: "the compaction is committed all the same (2 removed, head 3)")
    expectFailure(
      try await sessionctl(output, ["retention", "--keep", "5"]), output,
      committed: "the retention policy is committed all the same (0 removed, head 3)")
    #expect(try await succeeding(["retention", "--json"]).contains(#""keepLast":5"#))
    try await succeeding(["logout"])
    expectFailure(
      try await sessionctl(output, ["restore", backup]), output,
      committed: "the restore is committed all the same (head 3, was 4)")
    #expect(try await feed() == ["1|alice|1", "2|bob|1", "3|carol|1"])
  }

  /// Commands that only read: 74, nothing said of a commit (`watch` on a pipe whose reader
  /// went away is the one exception, below).
  @Test(arguments: [Output.full, .closed, .readerGone])
  func aReadWhoseResultCannotBeWrittenFails(output: Output) async throws {
    try await succeeding(["login", "alice"])
    for arguments in [
      ["status"], ["--json", "status"], ["history"], ["check"], ["retention"], ["--version"], ["help"],
      ["completion", "bash"],
    ] + (output == .readerGone ? [] : [["watch", "--limit", "1", "--since", "0"]]) {
      expectFailure(try await sessionctl(output, arguments), output)
    }
  }

  /// `watch` whose reader went away ends quietly with 0; on a full disk or a
  /// closed stdout it fails with 74 at its first line (the snapshot).
  @Test func watchTellsAReaderThatWentAwayFromAnOutputThatCannotBeWritten() async throws {
    try await succeeding(["login", "alice"])
    let gone = try await sessionctl(.readerGone, ["watch"])
    #expect(gone.status == 0, "\(gone.stderr)")
    #expect(gone.stderr.isEmpty, "\(gone.stderr)")
    for output in [Output.full, .closed] {
      expectFailure(try await sessionctl(output, ["watch"]), output)
    }
  }

  /// A hook that appends its cursor to `hooks`, for `watch --exec`.
  func hook(_ hooks: String) -> [String] {
    ["--exec", "--", "/bin/sh", "-c", #"echo "$SESSION_CURSOR" >> "$0""#, hooks]
  }

  /// The cursors the hook ran for, in order.
  func ran(_ hooks: String) -> [String] {
    (try? String(contentsOfFile: hooks, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
  }

  /// The line of a change is written after its command succeeded; when it cannot be written,
  /// `watch` stops there (74): the command ran for that change and for no later one, and
  /// the message names it and the `--since` that goes on after it.
  @Test(arguments: [Output.full, .closed])
  func watchExecStopsAtTheFirstLineItCannotWrite(output: Output) async throws {
    for name in ["alice", "bob", "carol"] { try await succeeding(["login", name]) }
    let first = try await succeeding(["history", "--json", "--limit", "1"])
    let time = try #require(
      (try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])?["at"] as? String)
    let hooks = dir.file("hooks-\(output)")
    let result = try await sessionctl(output, ["watch", "--since", "0"] + hook(hooks))
    expectFailure(
      result, output,
      committed: "the command succeeded for cursor 1, whose line is not printed: resuming from the last line "
        + "printed runs it again for cursor 1; --since 1@\(time) goes on after it")
    #expect(ran(hooks) == ["1"])
    // With a snapshot first, nothing runs: the snapshot line already could not be written.
    let snapshotFirst = dir.file("hooks-snapshot-\(output)")
    expectFailure(try await sessionctl(output, ["watch"] + hook(snapshotFirst)), output)
    #expect(ran(snapshotFirst).isEmpty)
  }

  /// The resume recipe of the sessionctl manual (docs/sessionctl.md) on a state file that
  /// fills up (`ulimit -f`): the line cut off is removed again, so the file ends on a whole
  /// line, the recipe's `--since` is the last change printed, and resuming from it runs the
  /// command for every later change once, and once more for the change whose line was lost
  /// (the one the error names).
  @Test func theResumeRecipeReadsWholeLinesAfterTheStateFileFilledUp() async throws {
    for name in ["alice", "bob", "carol", "dave", "erin"] { try await succeeding(["login", name]) }
    let history = try await succeeding(["history"]).split(separator: "\n")
    try #require(history.count == 5)
    let state = dir.file("done")
    let hooks = dir.file("hooks")
    // Above the 32 KiB a reader's -shm may need; then room for the line of cursor 2 and
    // half the line of cursor 3.
    let filler = String(repeating: String(repeating: "#", count: 999) + "\n", count: 40)
    try filler.write(toFile: state, atomically: false, encoding: .utf8)
    let limit = filler.utf8.count + history[1].utf8.count + 1 + history[2].utf8.count / 2
    let stopped = try await sessionctl(.file(state, limit: limit), ["watch", "--since", "1"] + hook(hooks))
    #expect(stopped.status == 74, "\(stopped.stderr)")
    #expect(
      stopped.stderr.contains("(File too large); the command succeeded for cursor 3,"), "\(stopped.stderr)")
    #expect(ran(hooks) == ["2", "3"], "no command after the line that failed")
    let text = try String(contentsOfFile: state, encoding: .utf8)
    #expect(text == filler + history[1] + "\n", "whole lines only: \(text.suffix(100))")
    // The recipe, verbatim from the article.
    let recipe = try await ProcessRunner.runDetached(
      "/usr/bin/awk",
      [
        #"/^snapshot at / { sub(":", "", $3); last = $3 } /^[0-9]/ { last = $1 "@" $2 }"#
          + "\n  END { print last }",
        state,
      ])
    let last = recipe.stdout.trimmingCharacters(in: .newlines)
    #expect(last.hasPrefix("2@"), "\(last)")
    try await succeeding(["watch", "--since", last, "--limit", "3"] + hook(hooks))
    #expect(ran(hooks) == ["2", "3", "3", "4", "5"], "again for 3 only, the change the error named")
  }
}

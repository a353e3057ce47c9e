import CommandLineKit
import SessionStorage
import SessionStoragePostgres
import Synchronization
import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

extension SessionCtl {
  /// `sessionctl watch`: a snapshot line (unless `--since` is given), then one line per
  /// change as it commits, until `--limit` changes, SIGINT/SIGTERM, or the output's reader
  /// goes away. With `--exec`, a command runs for each change first, and only the changes
  /// it succeeded on are printed.
  struct Watch: SessionCommand {
    static let exec = CommandLineFlag(
      "exec", help: "Run <command> for each change, one at a time, before printing its line (see above).")
    static let keepGoing = CommandLineFlag(
      "keep-going", help: "With --exec: when the command fails, say so on stderr and go on.")
    static let command = CommandLineArgument<String>(
      "command", help: "With --exec: the program and its arguments, after '--'.", isOptional: true,
      isRepeating: true)

    static let spec = CommandSpec(
      "watch", abstract: "Print changes as they commit, after a snapshot of the current state.",
      discussion: """
        The first line is the state and its cursor; every change committed after it
        follows, one line each, whichever process or tool made it (the sqlite3 shell
        included). With --since, the changes after that cursor come first and there is no
        snapshot line. Stops after --limit changes (exit 0), on SIGINT (exit 130), on
        SIGTERM (exit 143), always after a whole line, and quietly when the reader of its
        output goes away (exit 0). A line that cannot be written otherwise (a full disk, a
        closed stdout) stops it with exit 74.

        With --exec -- <command> [<argument> ...], the command runs once per change, in
        order, one at a time, started without a shell. Its environment has SESSION_CURSOR,
        SESSION_TIME, SESSION_ORIGIN, SESSION_ACCOUNT (the account's id), SESSION_USERNAME
        (its username after the change, or before it for a removal; unset when there is
        none; a value with a NUL byte, which no environment variable can carry, is refused:
        the command does not run for that change, which counts as a failure),
        SESSION_LOGGED_IN and SESSION_ACTIVE (1 or 0, after the change) and SESSION_EVENTS
        (e.g. "add,login,activate": add, login, logout, rename, activate, deactivate,
        remove), and the rest
        of watch's environment but the passwords: no PGPASSWORD, and SESSIONCTL_DB without
        its password (a hook that connects finds it in ~/.pgpass or PGPASSFILE). Its standard
        input is the change's JSON line; what it prints goes to stderr. A change's line is
        printed only once its command exited with 0, so '--since CURSOR@TIME' of the last
        line printed resumes with the first change not acted on. When that line cannot be
        written, watch stops (exit 74) before the next command, naming the change. When the command fails,
        watch stops with exit 1 and names the cursor, unless --keep-going. SIGINT and
        SIGTERM are passed on to a running command.

        With --account <username>, the snapshot line is that account's state (no username
        once it was removed) and only its changes follow, under the store's own cursors.
        """ + FeedOptions.accountDiscussion,
      arguments: [command], options: FeedOptions.declarations + [exec, keepGoing])

    /// Where to resume (nil: after a snapshot), and after how many changes to exit.
    let feed: FeedOptions
    /// The program and arguments of `--exec`; nil without it.
    let commandWords: [String]?
    let keepsGoing: Bool

    init(_ arguments: ParsedArguments) throws {
      feed = try FeedOptions(arguments)
      let words = try arguments.values(of: Self.command)
      keepsGoing = arguments[Self.keepGoing]
      if arguments[Self.exec] {
        guard !words.isEmpty else {
          throw arguments.usageError(
            .invalid("'--exec' needs a command: watch --exec -- <command> [<argument> ...]"))
        }
        commandWords = words
      } else {
        if let first = words.first {
          throw arguments.usageError(
            .invalid("'watch' runs a command only with '--exec': watch --exec -- \(first) ..."))
        }
        if keepsGoing { throw arguments.usageError(.invalid("'--keep-going' goes with '--exec'")) }
        commandWords = nil
      }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
      do {
        return try await follow(context)
      } catch let failure as LineWriter.Failure where failure.readerWentAway {
        // Nobody reads any more: that ends watch's job. Every other failed write is an error.
        return .success
      }
    }

    /// Prints the snapshot and the changes, running the command first for each.
    ///
    /// A change's line is written after its command succeeded, never before: the lines
    /// printed are the changes acted on, so a failed command is never taken for done. The
    /// first line that cannot be written stops watch before another command runs; its
    /// change is the only one whose command ran without its line being printed, and the
    /// error names it.
    private func follow(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      // A command that cannot run is refused before anything is printed.
      let command = try commandWords.map { try ChangeCommand($0, environment: context.environment) }
      let stop = StopSignals.shared
      let listening = stop.listen()
      defer { withExtendedLifetime(listening) {} }
      let store = try context.openForReading(location)
      // Once watching (an error alone is the one line of a failure): a password on the
      // command line can be read by every user of the machine for as long as watch runs.
      if location.source == .named, location.isPostgres, PostgresPasswords.containsPassword(location.path) {
        try context.errors.write(
          "sessionctl: warning: the password in --db can be read by every user of this machine while watch runs "
            + "(ps, /proc/PID/cmdline); keep it in ~/.pgpass or PGPASSFILE instead")
      }
      let presenter = context.presenter
      let output = context.output
      let errors = context.errors
      let account = try feed.account.map { try AccountLookup(store: store, username: $0) }
      let changes: SessionSubscription
      if let since = feed.since, let account {
        changes = try store.changes(from: since, account: account.id)
      } else if let since = feed.since {
        changes = try store.changes(from: since)
      } else if let account {
        // The account's state and the cursor it is at, read in one transaction, then its
        // changes after that cursor: no gap, no duplicate.
        let roster = try store.roster()
        let state: SessionState =
          roster.account(id: account.id)?.state ?? account.removedState
          ?? SessionState(username: nil, isLoggedIn: false, updatedAt: roster.activeSince)
        try output.write(presenter.snapshot(SessionSnapshot(state: state, cursor: roster.cursor)))
        changes = try store.changes(from: .after(roster.cursor), account: account.id)
      } else {
        let snapshot = try store.snapshotAndChanges()
        try output.write(presenter.snapshot(SessionSnapshot(state: snapshot.state, cursor: snapshot.cursor)))
        changes = snapshot.changes
      }
      if feed.limit == 0 { return .success }
      // Never silently blind: when file notifications cannot be set up, say once that
      // changes arrive by polling, and why.
      if case .polling(let interval, let reason) = changes.wakeMode {
        try? context.errors.write(
          "sessionctl: warning: cannot watch \(location.isPostgres ? "the database" : "the file") for changes "
            + "(\(reason)); polling every \(interval)")
      }
      // Aligned like `history` for the cursors of today; lines cannot be measured ahead.
      let cursorWidth = try store.bounds().head.description.count
      let limit = feed.limit
      let keepsGoing = keepsGoing
      let printing = Task { () async throws -> ExitCode? in
        var count = 0
        for try await entry in changes {
          switch try command?.run(for: entry, errors: errors) ?? .succeeded {
          case .succeeded:
            let line = presenter.change(entry, cursorWidth: cursorWidth, originWidth: 10)
            if command != nil {
              context.commitment.record(
                "the command succeeded for cursor \(entry.cursor), whose line is not printed: resuming from the "
                  + "last line printed runs it again for cursor \(entry.cursor); "
                  + "--since \(entry.cursor)@\(Timestamp.format(entry.time)) goes on after it")
            }
            try output.write(line)
            context.commitment.clear()
          case .stopped: return nil
          case .failed(let how) where keepsGoing:
            try? errors.write("sessionctl: warning: the command \(how) for cursor \(entry.cursor); going on")
          case .failed(let how):
            context.fail(
              "the command \(how) for cursor \(entry.cursor); its line was not printed: "
                + "resume with --since and the last line printed to run it again")
            return .failure
          }
          count += 1
          if let limit, count >= limit { return nil }
        }
        return nil
      }
      stop.onStop {
        printing.cancel()
        command?.stop(because: stop.reason)
      }
      let failure = try await printing.value
      return stop.reason?.exitCode ?? failure ?? .success
    }
  }
}

extension SessionCtl {
  /// Every command, option and argument sessionctl accepts, with its help text.
  static let commands: CommandSpec = {
    let since = OptionSpec(
      "since", .value(placeholder: "cursor"),
      help: "Start after this cursor (exclusive), e.g. the last one you saw. As CURSOR@TIME (the "
        + "time printed for that change) it is checked first: exit 67 if a restore replaced it.")
    let limit = OptionSpec(
      "limit", short: "n", .value(placeholder: "n"), help: "Stop after this many changes.")
    let subcommands = [
      CommandSpec(
        "status", abstract: "Show who is signed in, and the head cursor.",
        discussion: """
          Reads the file without writing to it; a missing file is reported (exit 1) and not
          created.
          """),
      CommandSpec(
        "login", abstract: "Sign in as <username>.",
        discussion: """
          A username is 1 to 256 characters (at most 1024 bytes in UTF-8), with no control
          characters, no invisible or bidirectional format characters (U+200B, U+FEFF,
          U+202E...; emoji keep their joiners), no unassigned or private-use code points,
          and no leading or trailing whitespace; it is stored in Unicode NFC. Signing in
          as the user who is already signed in changes nothing and prints "no change". Use
          '--' before a username that starts with a dash.
          """,
        arguments: [ArgumentSpec("username", help: "The user to sign in as.")]),
      CommandSpec(
        "logout", abstract: "Sign out (the username is kept).",
        discussion: "Signing out when nobody is signed in changes nothing and prints \"no change\"."),
      CommandSpec(
        "rename", abstract: "Change the username; the login state stays as it is.",
        arguments: [ArgumentSpec("username", help: "The new username (same rules as 'login').")]),
      CommandSpec(
        "watch", abstract: "Print changes as they commit, after a snapshot of the current state.",
        discussion: """
          The first line is the state and its cursor; every change committed after it
          follows, one line each, whichever process or tool made it (the sqlite3 shell
          included). With --since, the changes after that cursor come first and there is no
          snapshot line. Stops after --limit changes (exit 0), on SIGINT (exit 130), on
          SIGTERM (exit 143), always after a whole line, and quietly when the reader of its
          output goes away (exit 0).
          """,
        options: [since, limit]),
      CommandSpec(
        "history", abstract: "Print committed changes, oldest first.",
        discussion: "Without --since, starts at the oldest change still kept (see 'compact').",
        options: [since, limit]),
      CommandSpec(
        "compact", abstract: "Delete old changes from the feed.",
        discussion: """
          Give exactly one of --keep and --before. Cursors are never reused: after compaction
          the head cursor stays where it was, and a reader resuming from a deleted cursor
          gets exit status 66 with the oldest cursor still kept.
          """,
        options: [
          OptionSpec("keep", .value(placeholder: "n"), help: "Keep the newest <n> changes."),
          OptionSpec("before", .value(placeholder: "cursor"), help: "Delete the changes before <cursor>."),
        ],
        usageOverride: "(--keep <n> | --before <cursor>)"),
      CommandSpec(
        "migrate", abstract: "Create the file if needed and apply pending migrations.",
        discussion: "Prints each migration it applied, or that the file is up to date."),
      CommandSpec(
        "check", abstract: "Verify the file and report every finding.",
        discussion: """
          Runs PRAGMA integrity_check, compares the migration records with this build's,
          checks that the tables, indexes and triggers are exactly the ones the migrations
          create, that the session row is the state the newest change left (also after
          compaction), that every stored time is ISO-8601 UTC with milliseconds, that the
          cursors above the compaction point have no hole and lie between 1 and the largest
          integer, and that the stored username meets the rules. Reads without writing;
          exits 1 when anything fails.
          """),
    ]
    let help = CommandSpec(
      "help", abstract: "Show help for a command.",
      arguments: [
        ArgumentSpec(
          "command", help: "The command to explain.", isOptional: true,
          completions: subcommands.map(\.name) + ["help", "completion"])
      ])
    let completion = CommandSpec(
      "completion", abstract: "Print a shell completion script.",
      discussion: "Load it with: source <(sessionctl completion bash)",
      arguments: [ArgumentSpec("shell", help: "The shell: bash.", completions: ["bash"])])
    return CommandSpec(
      "sessionctl",
      abstract: "Show, change and watch who is signed in, in a SessionStorage database.",
      discussion: """
        The database is the file given by --db, else $SESSIONCTL_DB, else
        $XDG_DATA_HOME/sessionctl/session.db, else ~/.local/share/sessionctl/session.db. The
        first write creates it (mode 0600; the default directory with mode 0700). status,
        history, watch and check only read, and create nothing.

        EXIT STATUS: 0 success; 1 failure (a refused or missing file, a failed check);
        64 usage error; 65 invalid input (username, cursor, number); 66 cursor compacted
        away; 67 the history followed changed under 'watch', or '--since CURSOR@TIME'
        names a change a restore replaced; 130 and 143 'watch' stopped by SIGINT and SIGTERM.
        """,
      options: [
        OptionSpec(
          "db", .value(placeholder: "path"), help: "The database file (default: see 'sessionctl help').",
          isInherited: true, completesFiles: true),
        OptionSpec("json", short: "j", help: "Print JSON Lines: one object per line.", isInherited: true),
        OptionSpec("version", help: "Show the version."),
      ],
      subcommands: subcommands + [help, completion])
  }()
}

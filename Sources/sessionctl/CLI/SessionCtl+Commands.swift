import CommandLineKit

extension SessionCtl {
  /// Every command, in the order help lists them: the one list of sessionctl's commands.
  static let commands: [any SessionCommand.Type] = [
    Status.self, Login.self, Logout.self, Rename.self, Watch.self, History.self, Compact.self, Retention.self,
    Migrate.self, Backup.self, Restore.self, Check.self, Help.self, Completion.self,
  ]

  /// The tool's command: the global options, and ``commands`` as its subcommands.
  static let root = CommandSpec(
    "sessionctl",
    abstract: "Show, change and watch who is signed in, in a SessionStorage database.",
    discussion: """
      The database is the file given by --db, else $SESSIONCTL_DB, else
      $XDG_DATA_HOME/sessionctl/session.db, else ~/.local/share/sessionctl/session.db. The
      first write creates it (mode 0600; the default directory with mode 0700). status,
      history, watch and check only read, and create nothing.

      A postgresql://user@host:5432/db?schema=NAME URL (in --db or $SESSIONCTL_DB) names
      a PostgreSQL database instead: the store lives in schema NAME (default public), which
      the first write creates. Passwords come from ~/.pgpass, $PGPASSFILE or $PGPASSWORD
      and are never printed. backup, restore and retention work on files only.

      EXIT STATUS: 0 success; 1 failure (a refused or missing file, a failed check);
      64 usage error; 65 invalid input (username, cursor, number); 66 cursor compacted
      away; 67 the history followed changed under 'watch', or '--since CURSOR@TIME'
      names a change a restore replaced; 69 the PostgreSQL server cannot be reached or the
      connection was lost (worth retrying); 74 the result could not be written (a full
      disk, a closed stdout, a reader that went away but from 'watch'; a change made stays
      made); 77 the server refused the connection (no such database or role, login or
      password refused, SSL required); 130 and 143 'watch' stopped by SIGINT and SIGTERM.
      """,
    options: [GlobalOptions.db, GlobalOptions.json, GlobalOptions.version],
    subcommands: commands.map { $0.spec })
}

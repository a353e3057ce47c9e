import Foundation
import Testing

/// `help` and `-h`/`--help` at every level (the completion script: ``CompletionTests``).
@Suite(.serialized, .timeLimit(.minutes(10))) struct HelpTests {
  static let commands = [
    "status", "accounts", "login", "logout", "rename", "switch", "remove", "watch", "history", "compact",
    "retention", "migrate", "backup",
    "restore", "check", "help",
    "completion",
  ]

  @Test func rootHelp() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(["--help"])
    #expect(outcome.status == 0)
    #expect(outcome.stderr == "")
    let text = outcome.stdout
    #expect(
      text.hasPrefix("OVERVIEW: Show, change and watch who is signed in, in a SessionStorage database.\n"))
    #expect(text.contains("\nUSAGE: sessionctl [--db <path>] [--json] [--version] <subcommand>\n"))
    #expect(text.contains("\nOPTIONS:\n  --db <path>             The database file"))
    #expect(text.contains("\n  -j, --json              Print JSON Lines: one object per line.\n"))
    #expect(text.contains("\n  -h, --help              Show help information.\n"))
    #expect(text.contains("EXIT STATUS: 0 success"))
    let paragraphs = text.replacingOccurrences(of: "\n", with: " ")
    #expect(paragraphs.contains("66 cursor compacted"))
    #expect(paragraphs.contains("68 a write given --if-cursor found the store at another cursor"))
    #expect(paragraphs.contains("69 the PostgreSQL server cannot be reached"))
    #expect(text.hasSuffix("\n  See 'sessionctl help <subcommand>' for detailed help.\n"))
    for command in Self.commands {
      #expect(text.contains("\n  \(command) "), "SUBCOMMANDS lacks \(command)")
    }
    let sections = ["OVERVIEW:", "USAGE:", "OPTIONS:", "SUBCOMMANDS:"].map { text.range(of: $0)?.lowerBound }
    #expect(sections.allSatisfy { $0 != nil })
    #expect(sections.compactMap { $0 } == sections.compactMap { $0 }.sorted())
    #expect(text.split(separator: "\n").allSatisfy { $0.count <= 80 })
    #expect(try await sandbox.run(["-h"]).stdout == text)
    #expect(try await sandbox.run(["help"]).stdout == text)
  }

  @Test(arguments: commands)
  func everyCommandHasHelp(_ command: String) async throws {
    let sandbox = try Sandbox()
    let viaHelp = try await sandbox.run(["help", command])
    #expect(viaHelp.status == 0)
    #expect(viaHelp.stderr == "")
    #expect(viaHelp.stdout.hasPrefix("OVERVIEW: "))
    #expect(viaHelp.stdout.contains("\nUSAGE: sessionctl \(command)"))
    #expect(viaHelp.stdout.contains("\nOPTIONS:\n"))
    #expect(!viaHelp.stdout.contains("SUBCOMMANDS:"))
    #expect(viaHelp.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 })
    for flag in ["-h", "--help"] {
      let viaFlag = try await sandbox.run([command, flag])
      #expect(viaFlag.status == 0)
      #expect(viaFlag.stdout == viaHelp.stdout, "\(command) \(flag)")
    }
    // Help wins over anything else on the line, even mistakes.
    #expect(try await sandbox.run([command, "--bogus", "extra", "-h"]).stdout == viaHelp.stdout)
    #expect(!sandbox.exists(sandbox.home + "/.local"))
  }

  @Test func commandHelpLayout() async throws {
    let sandbox = try Sandbox()
    #expect(
      try await sandbox.run(["help", "login"]).stdout == """
        OVERVIEW: Sign in as <username> and make it the active account.

        An account of that name signs in and becomes the active one; any other name
        joins the roster as a new account, signed in and active. Other accounts stay as
        they are, signed in or not. Signing in as the active account, already signed in,
        changes nothing and prints "no change".

        A username is 1 to 256 characters (at most 1024 bytes in UTF-8), with no control
        characters, no invisible or bidirectional format characters (U+200B, U+FEFF,
        U+202E...; emoji keep their joiners), no unassigned or private-use code points,
        and no leading or trailing whitespace; it is stored in Unicode NFC. Use '--'
        before a username that starts with a dash. A store holds at most 1000 accounts.

        With --if-cursor <cursor> the write happens only while the store's newest cursor
        is still <cursor> (the one 'status' or the last line you read printed); when
        another write committed in between, it changes nothing and exits 68.

        USAGE: sessionctl login <username> [--if-cursor <cursor>] [--db <path>] [--json]

        ARGUMENTS:
          <username>              The user to sign in as.

        OPTIONS:
          --if-cursor <cursor>    Write only while the store's newest cursor is
                                  <cursor>; otherwise exit 68 and write nothing.
          --db <path>             The database file or PostgreSQL URL (default: see
                                  'sessionctl help').
          -j, --json              Print JSON Lines: one object per line.
          -h, --help              Show help information.

        """)
    let watch = try await sandbox.run(["watch", "--help"]).stdout
    #expect(
      watch.contains(
        "\nUSAGE: sessionctl watch [<command> ...] [--since <cursor>] [--limit <n>]\n"
          + "       [--account <username>] [--exec] [--keep-going] [--db <path>] [--json]\n"))
    #expect(watch.contains("\n  --since <cursor>        Start after this cursor"))
    #expect(watch.contains("\n  -n, --limit <n>         Stop after this many changes.\n"))
    #expect(watch.contains("\n  --keep-going            With --exec: when the command fails"))
    let compact = try await sandbox.run(["compact", "-h"]).stdout
    #expect(
      compact.contains(
        "\nUSAGE: sessionctl compact (--keep <n> | --before <cursor> | --older-than <age>)\n       [--db <path>] [--json]\n"
      ))
  }
}

import CommandLineKit
import Testing

/// Help pages, usage lines and the lines after a usage error, on small tools of their own.
@Suite struct HelpFormatterTests {
  static let db = CommandLineOption<String>(
    "db", placeholder: "path", help: "The file.", isInherited: true, isRequired: true)
  static let count = CommandLineOption<Int>("count", short: "c", placeholder: "n", help: "How many.")

  /// A tool without a `help` command, with a hidden one.
  static let tool = CommandSpec(
    "tool", abstract: "A tool.", discussion: "First paragraph,\nover two lines.\n\nSecond.",
    arguments: [CommandLineArgument<String>("item", help: "Items.", isOptional: true, isRepeating: true)],
    options: [db],
    subcommands: [
      CommandSpec("run", abstract: "Run it.", options: [count]),
      CommandSpec("child", abstract: "Started by the tool.", isHidden: true),
    ])

  let formatter = HelpFormatter(root: tool)

  @Test func rootHelp() {
    #expect(
      formatter.help(for: []) == """
        OVERVIEW: A tool.

        First paragraph, over two lines.

        Second.

        USAGE: tool [<item> ...] --db <path> <subcommand>

        ARGUMENTS:
          <item>                  Items.

        OPTIONS:
          --db <path>             The file.
          -h, --help              Show help information.

        SUBCOMMANDS:
          run                     Run it.

          See 'tool <subcommand> --help' for detailed help.

        """)
  }

  @Test func commandHelpShowsInheritedOptionsAfterItsOwn() {
    #expect(
      formatter.help(for: ["run"]) == """
        OVERVIEW: Run it.

        USAGE: tool run [--count <n>] --db <path>

        OPTIONS:
          -c, --count <n>         How many.
          --db <path>             The file.
          -h, --help              Show help information.

        """)
  }

  @Test func usageErrorsPointToTheCommandsHelp() {
    #expect(
      formatter.lines(after: UsageError(.missingCommand, commandPath: ["run"])) == [
        "Usage: tool run [--count <n>] --db <path>", "See 'tool run --help'.",
      ])
    #expect(
      formatter.diagnosis(of: UsageError(.unexpectedArgument("x"), commandPath: [])) == [
        "tool: error: unexpected argument 'x'", "Usage: tool [<item> ...] --db <path> <subcommand>",
        "See 'tool --help'.",
      ])
    let invalid = InvalidValue(expected: "a whole number ≥ 0", text: "x", name: "--count")
    #expect(
      formatter.diagnosis(of: invalid) == [
        "tool: error: invalid value 'x' for '--count': expected a whole number ≥ 0"
      ])
    #expect(formatter.diagnosis(of: CancellationError()) == nil)
  }

  @Test func aToolWithAHelpCommandPointsToIt() {
    let root = CommandSpec(
      "ctl", abstract: "Ctl.",
      subcommands: [CommandSpec("help", abstract: "Help."), CommandSpec("status", abstract: "Status.")])
    let formatter = HelpFormatter(root: root)
    #expect(formatter.help(for: []).hasSuffix("\n  See 'ctl help <subcommand>' for detailed help.\n"))
    #expect(formatter.lines(after: UsageError(.missingCommand, commandPath: [])).last == "See 'ctl help'.")
    #expect(
      formatter.lines(after: UsageError(.missingCommand, commandPath: ["status"])).last
        == "See 'ctl help status'.")
  }

  @Test func longLinesWrapAndLongLabelsGetALineOfTheirOwn() {
    let root = CommandSpec(
      "tool", abstract: "A tool.",
      options: [
        CommandLineOption<Int>(
          "a-rather-long-option-name", placeholder: "seconds",
          help: "Words that do not fit on one line of the help page go on to the next line, aligned.")
      ])
    #expect(
      HelpFormatter(root: root, width: 60).help(for: []) == """
        OVERVIEW: A tool.

        USAGE: tool [--a-rather-long-option-name <seconds>]

        OPTIONS:
          --a-rather-long-option-name <seconds>
                                  Words that do not fit on one line
                                  of the help page go on to the next
                                  line, aligned.
          -h, --help              Show help information.

        """)
  }

  @Test func hiddenCommandsRunButAreNotSuggested() throws {
    let parser = CommandLineParser(root: Self.tool)
    #expect(try parser.parse(["child", "--db", "x"]).commandPath == ["child"])
    // A root with arguments takes an unknown word as one of them.
    #expect(try parser.parse(["chlid", "--db", "x"]).arguments == ["chlid"])
    let bare = CommandSpec("tool", abstract: "A tool.", subcommands: Self.tool.subcommands)
    #expect(throws: UsageError(.unknownCommand("chlid", suggestion: nil), commandPath: [])) {
      try CommandLineParser(root: bare).parse(["chlid"])
    }
  }
}

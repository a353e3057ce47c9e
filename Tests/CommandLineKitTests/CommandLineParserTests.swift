import CommandLineKit
import Testing

/// The parser as a library, on a small tool of its own.
@Suite struct CommandLineParserTests {
  static let tool = CommandSpec(
    "tool", abstract: "A tool.",
    options: [
      CommandLineOption<String>("db", placeholder: "path", help: "The file.", isInherited: true),
      CommandLineFlag("json", short: "j", help: "JSON.", isInherited: true),
      CommandLineFlag("version", help: "Version."),
    ],
    subcommands: [
      CommandSpec(
        "watch", abstract: "Watch.",
        options: [
          CommandLineOption<String>("since", placeholder: "cursor", help: "Since."),
          CommandLineOption<String>("limit", short: "n", placeholder: "n", help: "Limit."),
          CommandLineFlag("verbose", short: "v", help: "Verbose."),
        ]),
      CommandSpec(
        "login", abstract: "Login.", arguments: [CommandLineArgument<String>("username", help: "Who.")]),
      CommandSpec(
        "help", abstract: "Help.",
        arguments: [CommandLineArgument<String>("command", help: "What.", isOptional: true)]),
    ])

  func parse(_ line: String) throws(UsageError) -> ParsedArguments {
    try CommandLineParser(root: Self.tool).parse(line.split(separator: " ").map(String.init))
  }

  func problem(_ line: String) -> UsageError.Problem? {
    do {
      _ = try parse(line)
      return nil
    } catch {
      return error.problem
    }
  }

  @Test func commandOptionsAndArguments() throws {
    let parsed = try parse("--db a.db login alice --json")
    #expect(parsed.commandPath == ["login"])
    #expect(parsed.values == ["db": "a.db"])
    #expect(parsed.flags == ["json"])
    #expect(parsed.arguments == ["alice"])
    #expect(!parsed.helpRequested)
  }

  @Test(arguments: [
    "watch --limit 5", "watch --limit=5", "watch -n 5", "watch -n5", "watch -jn5", "watch -jn 5",
    "watch -vjn5",
  ])
  func valueSpellings(_ line: String) throws {
    let parsed = try parse(line)
    #expect(parsed.values["limit"] == "5")
    #expect(parsed.commandPath == ["watch"])
  }

  @Test func groupedFlags() throws {
    let parsed = try parse("watch -vj")
    #expect(parsed.flags == ["verbose", "json"])
  }

  @Test func groupedValueTakesTheRestOfTheGroup() throws {
    let parsed = try parse("watch -nj")
    #expect(parsed.values["limit"] == "j")
    #expect(parsed.flags.isEmpty)
  }

  @Test func equalsKeepsEverythingAfterTheFirstEquals() throws {
    #expect(try parse("--db=a=b.db watch").values["db"] == "a=b.db")
    #expect(try parse("--db= watch").values["db"] == "")
    #expect(try parse("watch --since=-1").values["since"] == "-1")
  }

  @Test func inheritedOptionsWorkAfterTheCommand() throws {
    let parsed = try parse("watch --db x.db -j")
    #expect(parsed.values["db"] == "x.db")
    #expect(parsed.flags == ["json"])
  }

  @Test func doubleDashEndsOptions() throws {
    let parsed = try parse("login -- -dash")
    #expect(parsed.arguments == ["-dash"])
    #expect(try parse("login -- --json").arguments == ["--json"])
    #expect(try parse("login -- --").arguments == ["--"])
    #expect(try parse("login alice -- ").flags.isEmpty)
  }

  @Test func doubleDashDoesNotHideHelpBeforeIt() throws {
    #expect(try parse("login -h -- x").helpRequested)
    #expect(try parse("login -- -h").arguments == ["-h"])
  }

  @Test func numbersThatStartWithADashAreValuesAndArguments() throws {
    #expect(try parse("watch --since -1").values["since"] == "-1")
    #expect(try parse("login -42").arguments == ["-42"])
    #expect(try parse("login -").arguments == ["-"])
  }

  @Test(arguments: [
    ("watch --limit", "--limit <n>"), ("watch --limit --json", "--limit <n>"), ("watch -n", "--limit <n>"),
    ("watch --since -- 3", "--since <cursor>"), ("--db", "--db <path>"), ("watch -vn", "--limit <n>"),
  ])
  func missingValues(_ line: String, _ option: String) {
    #expect(problem(line) == .missingValue(option: option))
  }

  @Test func repeatedValueOptionIsAnError() {
    #expect(problem("watch --limit 1 --limit 2") == .repeatedOption("--limit"))
    #expect(problem("watch -n1 --limit=2") == .repeatedOption("--limit"))
    #expect(problem("--db a watch --db b") == .repeatedOption("--db"))
  }

  @Test func repeatedFlagIsTheSameAsOnce() throws {
    #expect(try parse("watch --json -j --json").flags == ["json"])
  }

  @Test func flagsTakeNoValue() {
    #expect(problem("watch --json=yes") == .unexpectedValue(option: "--json", value: "yes"))
  }

  @Test(
    arguments: [
      ("watch --dv x", "--dv", "--db"), ("watch --lmit 3", "--lmit", "--limit"),
      ("watch --sicne 3", "--sicne", "--since"),
      ("watch --lim 3", "--lim", "--limit"), ("watch --jsno", "--jsno", "--json"),
      ("--verison", "--verison", "--version"),
      ("login x --limit 3", "--limit", nil), ("watch --zzzzzz", "--zzzzzz", nil),
      ("watch -d x", "-d", "--db"),
      ("watch -q", "-q", nil),
    ] as [(String, String, String?)])
  func unknownOptionsSuggestTheNearest(_ line: String, _ typed: String, _ suggestion: String?) {
    #expect(problem(line) == .unknownOption(typed, suggestion: suggestion))
  }

  @Test(
    arguments: [
      ("wacth", "watch"), ("lgoin", "login"), ("logn", "login"), ("halp", "help"), ("frobnicate", nil),
    ] as [(String, String?)])
  func unknownCommandsSuggestTheNearest(_ typed: String, _ suggestion: String?) {
    #expect(problem(typed) == .unknownCommand(typed, suggestion: suggestion))
  }

  @Test func argumentsAreCounted() {
    #expect(problem("login") == .missingArgument("username"))
    #expect(problem("login a b") == .unexpectedArgument("b"))
    #expect(problem("watch now") == .unexpectedArgument("now"))
  }

  @Test func optionalArgument() throws {
    #expect(try parse("help").arguments.isEmpty)
    #expect(try parse("help watch").arguments == ["watch"])
  }

  @Test func theFirstErrorWins() {
    #expect(problem("watch --bogus --limit") == .unknownOption("--bogus", suggestion: nil))
  }

  @Test func errorsNameTheCommandBeingParsed() throws {
    do {
      _ = try parse("watch --lmit 3")
      Issue.record("expected an error")
    } catch {
      #expect(error.commandPath == ["watch"])
      #expect(error.message == "unknown option '--lmit'. Did you mean '--limit'?")
    }
  }

  @Test(arguments: [
    "-h", "--help", "watch -h", "watch --bogus --help", "login --help", "-jh", "--help watch",
  ])
  func helpAnywhere(_ line: String) throws {
    let parsed = try parse(line)
    #expect(parsed.helpRequested)
  }

  @Test func helpIsForTheDeepestCommandNamed() throws {
    #expect(try parse("--help watch").commandPath == ["watch"])
    #expect(try parse("watch --bogus -h").commandPath == ["watch"])
    #expect(try parse("-h").commandPath == [])
  }

  @Test func rootWithoutACommandIsLeftToTheCaller() throws {
    let parsed = try parse("--version")
    #expect(parsed.commandPath == [])
    #expect(parsed.flags == ["version"])
  }

  @Test func rootOnlyOptionsAreNotInherited() {
    #expect(problem("watch --version") == .unknownOption("--version", suggestion: nil))
  }

  @Test func emptyLine() throws {
    #expect(try parse("") == ParsedArguments())
  }
}

@Suite struct NearestMatchTests {
  @Test(
    arguments: [
      ("", "", 0), ("a", "", 1), ("", "abc", 3), ("kitten", "sitting", 3), ("status", "stauts", 1),
      ("ab", "ba", 1),
      ("login", "login", 0), ("ca", "abc", 3),
    ] as [(String, String, Int)])
  func editDistance(_ lhs: String, _ rhs: String, _ distance: Int) {
    #expect(NearestMatch.editDistance(lhs, rhs) == distance)
    #expect(NearestMatch.editDistance(rhs, lhs) == distance)
  }

  @Test func tiesGoToTheEarlierCandidate() {
    #expect(NearestMatch.suggestion(for: "--lb", among: ["--db", "--lc"]) == "--db")
  }

  @Test func shortNamesNeedACloseMatch() {
    #expect(NearestMatch.suggestion(for: "ab", among: ["xy"]) == nil)
    #expect(NearestMatch.suggestion(for: "-", among: ["--db"]) == nil)
  }
}

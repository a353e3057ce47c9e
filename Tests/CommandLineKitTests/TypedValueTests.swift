import CommandLineKit
import Testing

/// Options and arguments read through their typed declarations.
@Suite struct TypedValueTests {
  static let limit = CommandLineOption<Int>("limit", short: "n", placeholder: "n", help: "Limit.")
  static let name = CommandLineOption<String>("name", help: "Name.", isRequired: true)
  static let seed = CommandLineOption<UInt64>("seed", help: "Seed.")
  static let long = CommandLineOption<Double>("long", placeholder: "seconds", help: "Seconds.")
  static let verbose = CommandLineFlag("verbose", short: "v", help: "Verbose.")
  static let first = CommandLineArgument<String>("first", help: "First.")
  static let rest = CommandLineArgument<Int>("rest", help: "Rest.", isOptional: true, isRepeating: true)

  static let tool = CommandSpec(
    "tool", abstract: "A tool.", arguments: [first, rest], options: [limit, name, seed, long, verbose])

  func parse(_ line: String) throws -> ParsedArguments {
    try CommandLineParser(root: Self.tool).parse(line.split(separator: " ").map(String.init))
  }

  @Test func valuesHaveTheirTypes() throws {
    let parsed = try parse("a 1 2 3 -vn 5 --name x --seed 18446744073709551615 --long 2.5")
    #expect(try parsed[Self.limit] == 5)
    #expect(try parsed.required(Self.name) == "x")
    #expect(try parsed[Self.seed] == UInt64.max)
    #expect(try parsed[Self.long] == 2.5)
    #expect(parsed[Self.verbose])
    #expect(try parsed.required(Self.first) == "a")
    #expect(try parsed.values(of: Self.rest) == [1, 2, 3])
    #expect(try parsed[Self.rest] == 1)
    #expect(parsed.contains(Self.limit) && parsed.contains(Self.verbose))
  }

  @Test func absentValuesAreNil() throws {
    let parsed = try parse("a")
    #expect(try parsed[Self.limit] == nil)
    #expect(!parsed[Self.verbose])
    #expect(try parsed.values(of: Self.rest).isEmpty)
    #expect(!parsed.contains(Self.limit) && !parsed.contains(Self.verbose))
  }

  @Test func aMissingRequiredOptionIsAUsageError() throws {
    let parsed = try parse("a")
    #expect(throws: UsageError(.missingOption("--name <name>"), commandPath: [])) {
      try parsed.required(Self.name)
    }
    #expect(
      UsageError(.missingOption("--name <name>"), commandPath: []).message == "missing option '--name <name>'"
    )
  }

  @Test(
    arguments: [
      ("a --limit x", "invalid value 'x' for '--limit': expected a whole number ≥ 0"),
      ("a --limit -1", "invalid value '-1' for '--limit': expected a whole number ≥ 0"),
      ("a --limit +1", "invalid value '+1' for '--limit': expected a whole number ≥ 0"),
      (
        "a --limit 99999999999999999999",
        "invalid value '99999999999999999999' for '--limit': expected a whole number from 0 to 9223372036854775807"
      ),
      (
        "a --seed 18446744073709551616",
        "invalid value '18446744073709551616' for '--seed': expected a whole number from 0 to 18446744073709551615"
      ),
      ("a --long nan", "invalid value 'nan' for '--long': expected a number ≥ 0"),
      ("a --long -1", "invalid value '-1' for '--long': expected a number ≥ 0"),
      ("a 1 z", "invalid value 'z' for '<rest>': expected a whole number ≥ 0"),
    ])
  func refusedValuesSayWhatWasExpected(_ line: String, _ message: String) throws {
    let parsed = try parse(line)
    do {
      _ = try parsed[Self.limit]
      _ = try parsed[Self.seed]
      _ = try parsed[Self.long]
      _ = try parsed.values(of: Self.rest)
      Issue.record("expected a refusal")
    } catch {
      #expect(error.message == message)
    }
  }

  @Test func aTypeOfTheToolsOwnNamesItsNoun() throws {
    struct Even: CommandLineValue {
      var value: Int
      init(argument: String) throws(InvalidValue) {
        guard let value = Int(argument), value.isMultiple(of: 2) else {
          throw InvalidValue(expected: "an even number", noun: "count")
        }
        self.value = value
      }
    }
    let even = CommandLineOption<Even>("even", help: "Even.")
    let parsed = try CommandLineParser(root: CommandSpec("t", abstract: "T.", options: [even])).parse([
      "--even", "3",
    ])
    #expect(throws: InvalidValue(expected: "an even number", noun: "count", text: "3", name: "--even")) {
      try parsed[even]
    }
  }

  @Test func commandsReadThemselvesFromTheLine() throws {
    struct Greet: TypedCommand {
      static let loud = CommandLineFlag("loud", help: "Shout.")
      static let who = CommandLineArgument<String>("who", help: "Whom.")
      static let spec = CommandSpec("greet", abstract: "Greet.", arguments: [who], options: [loud])
      let line: String
      init(_ arguments: ParsedArguments) throws {
        let text = "hello, " + (try arguments.required(Self.who))
        line = arguments[Self.loud] ? text.uppercased() : text
      }
    }
    let root = CommandSpec("tool", abstract: "A tool.", subcommands: [Greet.spec])
    let parsed = try CommandLineParser(root: root).parse(["greet", "--loud", "bob"])
    #expect(parsed.commandPath == [Greet.spec.name])
    #expect(try Greet(parsed).line == "HELLO, BOB")
  }
}

import CommandLineKit
import Testing

/// What the generated script offers; bash itself runs sessionctl's script in its tests.
@Suite struct BashCompletionTests {
  static let tool = CommandSpec(
    "my-tool", abstract: "A tool.",
    options: [
      CommandLineOption<String>(
        "db", placeholder: "path", help: "File.", isInherited: true, completesFiles: true)
    ],
    subcommands: [
      CommandSpec(
        "help", abstract: "Help.",
        arguments: [
          CommandLineArgument<String>("command", help: "What.", isOptional: true, completion: .commandNames)
        ]),
      CommandSpec(
        "paint", abstract: "Paint.",
        arguments: [
          CommandLineArgument<String>("colour", help: "Colour.", completion: .words(["red", "blue"]))
        ],
        options: [CommandLineOption<Int>("coats", short: "c", placeholder: "n", help: "Coats.")]),
      CommandSpec(
        "spawned", abstract: "Hidden.", options: [CommandLineFlag("secret", help: "Secret.")], isHidden: true),
    ])

  let script = BashCompletion(root: tool).script

  @Test func theFunctionIsNamedAfterTheTool() {
    #expect(
      script.hasPrefix("# bash completion for my-tool; load it with: source <(my-tool completion bash)\n"))
    #expect(script.contains("\n_my_tool() {\n"))
    #expect(script.hasSuffix("complete -F _my_tool my-tool\n"))
  }

  @Test func commandsTheirOptionsAndTheirWords() {
    #expect(script.contains("\":0\") words=\"help paint\" ;;"))
    #expect(script.contains("help:0) words=\"help paint\" ;;"))
    #expect(script.contains("paint:0) words=\"red blue\" ;;"))
    #expect(script.contains("paint) options=\"--coats -c --db --help -h\" ;;"))
    #expect(script.contains("--coats|--db) expect=\"$w\" ;;"))
    #expect(script.contains("--db) _my_tool_files \"$value\" \"$head\" \"$prefix\" ;;"))
  }

  @Test func hiddenCommandsAreLeftOut() {
    #expect(!script.contains("spawned"))
    #expect(!script.contains("--secret"))
  }
}

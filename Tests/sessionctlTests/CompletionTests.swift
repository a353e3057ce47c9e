import Foundation
import Testing

/// A command line typed up to the cursor, and the words `<Tab>` should offer there.
struct CompletionCase: Sendable, CustomTestStringConvertible {
  /// The line, cursor at its end.
  var line: String
  /// The completions bash gets (`COMPREPLY`), in any order.
  var expected: [String]
  /// Whether `=` and `:` split words, as in bash's default `COMP_WORDBREAKS`.
  var splitsAtEquals = true

  var testDescription: String { (splitsAtEquals ? "" : "(no = in COMP_WORDBREAKS) ") + line + "⇥" }

  init(_ line: String, _ expected: [String], splitsAtEquals: Bool = true) {
    self.line = line
    self.expected = expected
    self.splitsAtEquals = splitsAtEquals
  }
}

/// `sessionctl completion bash`, driven by bash itself: the script is sourced, the
/// completion variables are set the way bash sets them for a line (with `--db=s.db` split
/// into `--db`, `=`, `s.db`), and `COMPREPLY` is compared. The working directory holds the
/// files `s.db`, `data.db` and `sub/x.db`.
@Suite(.timeLimit(.minutes(10))) struct CompletionTests {
  static let commands = HelpTests.commands
  static let files = ["data.db", "s.db", "sub"]

  static let cases: [CompletionCase] = [
    // Commands, and options before them.
    CompletionCase("sessionctl ", commands),
    CompletionCase("sessionctl wa", ["watch"]),
    CompletionCase("sessionctl -", ["--db", "--help", "--json", "--version", "-h", "-j"]),
    CompletionCase("sessionctl --", ["--db", "--help", "--json", "--version"]),
    CompletionCase("sessionctl -j st", ["status"]),
    CompletionCase("sessionctl --json st", ["status"]),
    // --db PATH and --db=PATH: file names for the value, and the value is not the command.
    CompletionCase("sessionctl --db ", files),
    CompletionCase("sessionctl --db s", ["s.db", "sub"]),
    CompletionCase("sessionctl --db=", files),
    CompletionCase("sessionctl --db=s", ["s.db", "sub"]),
    CompletionCase("sessionctl --db=sub/", ["sub/x.db"]),
    CompletionCase("sessionctl --db s.db st", ["status"]),
    CompletionCase("sessionctl --db=s.db ", commands),
    CompletionCase("sessionctl --db=s.db st", ["status"]),
    CompletionCase("sessionctl --db=s.db -j --db=", files),
    CompletionCase("sessionctl --db=a:b.db st", ["status"]),
    CompletionCase("sessionctl --db=s.db watch --l", ["--limit"]),
    // The same without "=" (and ":") in COMP_WORDBREAKS: bash passes --db=s as one word.
    CompletionCase("sessionctl --db=s", ["--db=s.db", "--db=sub/"], splitsAtEquals: false),
    CompletionCase("sessionctl --db=s.db st", ["status"], splitsAtEquals: false),
    CompletionCase("sessionctl completion --db=x.db ", ["bash"], splitsAtEquals: false),
    // Options of a command, after it; values of value options complete to nothing.
    CompletionCase("sessionctl watch --l", ["--limit"]),
    CompletionCase("sessionctl watch --e", ["--exec"]),
    CompletionCase("sessionctl watch --k", ["--keep-going"]),
    CompletionCase("sessionctl login -", ["--db", "--help", "--if-cursor", "--json", "-h", "-j"]),
    // The roster's commands and options.
    CompletionCase("sessionctl acc", ["accounts"]),
    CompletionCase("sessionctl sw", ["switch"]),
    CompletionCase("sessionctl rem", ["remove"]),
    CompletionCase("sessionctl re", ["remove", "rename", "restore", "retention"]),
    CompletionCase("sessionctl logout --", ["--all", "--db", "--help", "--if-cursor", "--json"]),
    CompletionCase("sessionctl rename --a", ["--account"]),
    CompletionCase("sessionctl switch --i", ["--if-cursor"]),
    CompletionCase("sessionctl remove --if-cursor ", []),
    CompletionCase("sessionctl history --a", ["--account"]),
    CompletionCase("sessionctl watch --account ", []),
    CompletionCase("sessionctl watch --since ", []),
    CompletionCase("sessionctl watch --since=", []),
    CompletionCase("sessionctl watch --since 5 --l", ["--limit"]),
    CompletionCase("sessionctl watch --since 5@2024-05-01T12:00:00.000Z --l", ["--limit"]),
    CompletionCase("sessionctl history -n ", []),
    CompletionCase("sessionctl history -jn 5 --s", ["--since"]),
    CompletionCase("sessionctl compact --keep 3 --b", ["--before"]),
    CompletionCase("sessionctl compact --before=4 --k", ["--keep"]),
    // A command's positional words, once, whatever options and values come between.
    CompletionCase("sessionctl completion ", ["bash"]),
    CompletionCase("sessionctl completion bash ", []),
    CompletionCase("sessionctl completion bash b", []),
    CompletionCase("sessionctl completion --db x.db ", ["bash"]),
    CompletionCase("sessionctl completion --db=x.db ", ["bash"]),
    CompletionCase("sessionctl completion --db=a:b.db ", ["bash"]),
    CompletionCase("sessionctl -j completion -j b", ["bash"]),
    CompletionCase("sessionctl help com", ["compact", "completion"]),
    CompletionCase("sessionctl help watch ", []),
    CompletionCase("sessionctl --db=s.db help --json ", commands),
    // "--" ends the options: no option after it, and a word after it is never the command.
    CompletionCase("sessionctl -- ", []),
    CompletionCase("sessionctl -- -", []),
    CompletionCase("sessionctl login -- -", []),
    CompletionCase("sessionctl help -- wa", ["watch"]),
  ]

  @Test(arguments: cases) func completes(_ completion: CompletionCase) async throws {
    let sandbox = try Self.sandbox()
    let script = try await Self.script(in: sandbox)
    let breaks = Set(#""'@><=;|&(:"#).subtracting(completion.splitsAtEquals ? [] : ["=", ":"])
    let (words, typed) = Self.split(completion.line, breaks: breaks)
    let program = """
      script=$1 COMP_CWORD=$2 COMP_POINT=$3 COMP_LINE=$4 typed=$5 unsplit=$6; shift 6; COMP_WORDS=("$@")
      source "$script" && cd "${script%/*}/work" || exit
      [ "$unsplit" = 1 ] && COMP_WORDBREAKS=${COMP_WORDBREAKS//[=:]/}
      _sessionctl sessionctl "$typed" "${COMP_WORDS[COMP_CWORD-1]}"
      printf '%s\\n' "${COMPREPLY[@]}"
      """
    let arguments =
      [
        "--norc", "--noprofile", "-c", program, "bash", script, String(words.count - 1),
        String(completion.line.utf8.count), completion.line, typed, completion.splitsAtEquals ? "0" : "1",
      ] + words
    let result = try await sandbox.runProgram("/bin/bash", arguments, environment: sandbox.environment)
    #expect(result.status == 0, "\(result)")
    #expect(result.stderr == "", "\(result)")
    let offered = result.lines.filter { !$0.isEmpty }.sorted()
    #expect(offered == completion.expected.sorted(), "COMP_WORDS \(words), $2 '\(typed)'")
  }

  /// An interactive bash on a terminal: the line is typed, then Tab and Return, and
  /// `sessionctl` (a shell function here) prints the words it got.
  @Test func interactiveBashCompletesTheLine() async throws {
    let sandbox = try Self.sandbox()
    let script = try await Self.script(in: sandbox)
    let typed: [(String, [String])] = [
      ("sessionctl --db=s.", ["--db=s.db"]),
      ("sessionctl --db=s.db st", ["--db=s.db", "status"]),
      ("sessionctl --db=su", ["--db=sub/"]),
      ("sessionctl --db s.", ["--db", "s.db"]),
      ("sessionctl completion b", ["completion", "bash"]),
      ("sessionctl completion bash ", ["completion", "bash"]),
      ("sessionctl -- ", ["--"]),
    ]
    let driver = """
      import os, pty, select, sys, time
      script, lines = sys.argv[1], sys.argv[2:]
      pid, fd = pty.fork()
      if pid == 0:
          os.chdir(os.path.dirname(script) + '/work')
          os.environ.update(PS1='$ ', TERM='dumb', INPUTRC='/dev/null')
          os.execv('/bin/bash', ['bash', '--norc', '--noprofile', '-i'])
      def read_until(marker):
          out, end = b'', time.time() + 20
          while marker not in out and time.time() < end:
              if select.select([fd], [], [], 0.1)[0]:
                  try: out += os.read(fd, 4096)
                  except OSError: break
          return out.decode(errors='replace')
      os.write(fd, b"source '" + script.encode() + b"'; sessionctl() { printf '<%s>' \\"$@\\"; echo; }; echo RE''ADY\\n")
      read_until(b'\\r\\nREADY\\r\\n')
      for line in lines:
          os.write(fd, line.encode() + b"\\t\\necho E''ND\\n")
          out = read_until(b'\\r\\nEND\\r\\n')
          print(([l for l in out.split('\\r\\n') if l.startswith('<')] or ['?'])[-1])
      os.write(fd, b'exit\\n')
      os.waitpid(pid, 0)
      """
    let result = try await sandbox.runProgram(
      "/usr/bin/python3", ["-c", driver, script] + typed.map(\.0), environment: sandbox.environment)
    #expect(result.status == 0, "\(result)")
    let expected = typed.map { $0.1.map { "<\($0)>" }.joined() }
    #expect(result.lines == expected, "\(result)")
  }

  /// Called by hand with COMP_WORDS and COMP_CWORD alone (no COMP_LINE, no arguments), the
  /// function still joins the words bash split at "=".
  @Test func completesWithoutBashsArguments() async throws {
    let sandbox = try Self.sandbox()
    let script = try await Self.script(in: sandbox)
    func complete(_ words: [String]) async throws -> [String] {
      let program = """
        source "$1" && cd "${1%/*}/work" || exit
        shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sessionctl
        printf '%s\\n' "${COMPREPLY[@]}"
        """
      let result = try await sandbox.runProgram(
        "/bin/bash", ["--norc", "--noprofile", "-c", program, "bash", script] + words,
        environment: sandbox.environment)
      #expect(result.status == 0 && result.stderr == "", "\(result)")
      return result.lines.filter { !$0.isEmpty }.sorted()
    }
    #expect(try await complete(["sessionctl", "wa"]) == ["watch"])
    #expect(try await complete(["sessionctl", "--db", "=", "s"]) == ["s.db", "sub"])
    #expect(try await complete(["sessionctl", "--db", "="]) == Self.files)
    #expect(try await complete(["sessionctl", "--db", "=", "s.db", "st"]) == ["status"])
    #expect(try await complete(["sessionctl", "completion", "bash", ""]) == [])
    #expect(try await complete(["sessionctl", "history", "--since", ""]) == [])
  }

  @Test func scriptIsPrinted() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(["completion", "bash"])
    #expect(outcome.status == 0)
    #expect(outcome.stderr == "")
    #expect(outcome.stdout.hasPrefix("# bash completion for sessionctl"))
    #expect(outcome.stdout.hasSuffix("complete -F _sessionctl sessionctl\n"))
  }

  /// COMP_WORDS and the word bash passes as `$2` for `line` with the cursor at its end, as
  /// bash 5 splits them: at blanks, and around each run of `COMP_WORDBREAKS` characters,
  /// which is a word of its own (`--db=s` is `--db`, `=`, `s`; after `--db=` the word
  /// being completed is empty). Lines with quotes are not handled.
  static func split(_ line: String, breaks: Set<Character>) -> (words: [String], typed: String) {
    var words: [String] = []
    for token in line.split(separator: " ") {
      var current = ""
      for character in token {
        if let last = current.last, breaks.contains(last) != breaks.contains(character) {
          words.append(current)
          current = ""
        }
        current.append(character)
      }
      words.append(current)
    }
    if line.isEmpty || line.hasSuffix(" ") { words.append("") }
    let last = words[words.count - 1]
    let typed = last.allSatisfy(breaks.contains) ? "" : last
    return (words, typed)
  }

  /// A sandbox whose `work` directory holds `s.db`, `data.db` and `sub/x.db`.
  static func sandbox() throws -> Sandbox {
    let sandbox = try Sandbox()
    try FileManager.default.createDirectory(
      atPath: sandbox.path("work/sub"), withIntermediateDirectories: true)
    for file in ["s.db", "data.db", "sub/x.db"] {
      try Data().write(to: URL(fileURLWithPath: sandbox.path("work/" + file)))
    }
    return sandbox
  }

  /// Writes `sessionctl completion bash` into the sandbox and returns its path.
  static func script(in sandbox: Sandbox) async throws -> String {
    let outcome = try await sandbox.run(["completion", "bash"])
    try #require(outcome.status == 0, "\(outcome)")
    let path = sandbox.path("completion.bash")
    try Data(outcome.stdout.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }
}

/// Renders usage lines and help pages in swift-argument-parser's layout: OVERVIEW, USAGE,
/// ARGUMENTS, OPTIONS, SUBCOMMANDS.
package struct HelpFormatter: Sendable {
  package let root: CommandSpec
  /// The width text is wrapped to.
  package var width = 80

  package init(root: CommandSpec, width: Int = 80) {
    self.root = root
    self.width = width
  }

  private static let labelWidth = 24

  /// The usage line of the command at `path`, without the `USAGE:` prefix.
  package func usage(for path: [String]) -> String {
    guard let chain = root.chain(to: path) else { return root.name }
    let command = chain[chain.count - 1]
    var parts = chain.map(\.name)
    parts += command.arguments.map(\.synopsis)
    let scope = chain.optionsInScope.filter { $0.name != CommandSpec.helpFlag.name }
    if let override = command.usageOverride {
      parts.append(override)
      let own = Set(command.options.map(\.name))
      parts += scope.filter { !own.contains($0.name) }.map(Self.usageWord)
    } else {
      parts += scope.map(Self.usageWord)
    }
    if !command.visibleSubcommands.isEmpty { parts.append("<subcommand>") }
    return parts.joined(separator: " ")
  }

  /// The help page of the command at `path`, ending in a newline.
  package func help(for path: [String]) -> String {
    guard let chain = root.chain(to: path) else { return "" }
    let command = chain[chain.count - 1]
    var sections: [String] = []
    sections.append(wrap("OVERVIEW: " + command.abstract, indent: 0))
    if !command.discussion.isEmpty {
      let paragraphs = command.discussion.split(separator: "\n\n")
      sections.append(
        paragraphs.map { wrap($0.split(separator: "\n").joined(separator: " "), indent: 0) }.joined(
          separator: "\n\n"))
    }
    sections.append(wrap("USAGE: " + usage(for: path), indent: 7))
    if !command.arguments.isEmpty {
      sections.append(
        (["ARGUMENTS:"] + command.arguments.map { row("<\($0.name)>", $0.help) }).joined(separator: "\n"))
    }
    sections.append(
      (["OPTIONS:"] + chain.optionsInScope.map { row(label(for: $0), $0.help) }).joined(separator: "\n"))
    if !command.visibleSubcommands.isEmpty {
      let rows = command.visibleSubcommands.map { row($0.name, $0.abstract) }
      let more = "  See '\(helpCommand(for: path + ["<subcommand>"]))' for detailed help."
      sections.append((["SUBCOMMANDS:"] + rows + ["", more]).joined(separator: "\n"))
    }
    return sections.joined(separator: "\n\n") + "\n"
  }

  /// What to type for the help of the command at `path`: `tool help <command>` when the
  /// root has a `help` command, else `tool <command> --help`.
  package func helpCommand(for path: [String]) -> String {
    guard root.subcommand(named: "help") != nil else {
      return ([root.name] + path + ["--help"]).joined(separator: " ")
    }
    return ([root.name, "help"] + path).joined(separator: " ")
  }

  /// The lines that follow a usage error's message: the usage line of the command it was
  /// about, and where to read more.
  package func lines(after error: UsageError) -> [String] {
    [
      "Usage: " + usage(for: error.commandPath),
      "See '\(helpCommand(for: Array(error.commandPath.prefix(1))))'.",
    ]
  }

  /// What a tool prints on stderr for a line it cannot run: `tool: error: MESSAGE` and, for
  /// a ``UsageError``, the lines after it; nil for an error that is not about the line.
  package func diagnosis(of error: any Error) -> [String]? {
    switch error {
    case let usage as UsageError: ["\(root.name): error: \(usage.message)"] + lines(after: usage)
    case let invalid as InvalidValue: ["\(root.name): error: \(invalid.message)"]
    default: nil
    }
  }

  /// `[--json]`, or `--db <path>` for a required option.
  private static func usageWord(_ option: any NamedOption) -> String {
    option.isRequired ? option.synopsis : "[\(option.synopsis)]"
  }

  /// `-n, --limit <n>` or `--db <path>`.
  package func label(for option: any NamedOption) -> String {
    (option.shortSpelling.map { $0 + ", " } ?? "") + option.synopsis
  }

  /// An indented label with its text in the second column (on the next line when the label is long).
  private func row(_ label: String, _ text: String) -> String {
    let column = Self.labelWidth + 2
    let lines = wrapWords(text, width: width - column)
    let padding = String(repeating: " ", count: column)
    var output = "  " + label
    if label.count + 2 < column - 1, let first = lines.first {
      output += String(repeating: " ", count: column - 2 - label.count) + first
      for line in lines.dropFirst() { output += "\n" + padding + line }
    } else {
      for line in lines { output += "\n" + padding + line }
    }
    return output
  }

  /// `text` wrapped to the width, later lines indented by `indent` spaces.
  private func wrap(_ text: String, indent: Int) -> String {
    var lines = wrapWords(text, width: width)
    if lines.count > 1 {
      lines = [lines[0]] + wrapWords(lines.dropFirst().joined(separator: " "), width: width - indent)
    }
    return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
  }

  private func wrapWords(_ text: String, width: Int) -> [String] {
    // Words never break; a word longer than the width gets a line of its own.
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ", omittingEmptySubsequences: true) {
      if line.isEmpty {
        line = String(word)
      } else if line.count + 1 + word.count <= width {
        line += " " + word
      } else {
        lines.append(line)
        line = String(word)
      }
    }
    if !line.isEmpty || lines.isEmpty { lines.append(line) }
    return lines
  }
}

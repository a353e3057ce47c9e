/// Writes a bash completion script for a tree of ``CommandSpec``s (two levels: the tool
/// and its commands). Load it with `source <(tool completion bash)`.
struct BashCompletion: Sendable {
  /// The tool's command.
  let root: CommandSpec

  /// The script.
  var script: String {
    let function = "_" + root.name.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
    let all = [root] + root.subcommands
    let valueOptions = Set(
      all.flatMap { command in
        command.options.filter(\.takesValue).flatMap {
          [$0.longSpelling] + ($0.shortSpelling.map { [$0] } ?? [])
        }
      }
    ).sorted()
    let fileOptions = Set(
      all.flatMap { command in
        command.options.filter(\.completesFiles).flatMap {
          [$0.longSpelling] + ($0.shortSpelling.map { [$0] } ?? [])
        }
      }
    ).sorted()
    var lines: [String] = []
    lines.append("# bash completion for \(root.name); load it with: source <(\(root.name) completion bash)")
    lines.append("\(function)() {")
    lines.append("  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" command=\"\" i")
    lines.append("  [ \"$COMP_CWORD\" -gt 0 ] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"")
    lines.append("  for ((i = 1; i < COMP_CWORD; i++)); do")
    lines.append("    case \"${COMP_WORDS[i]}\" in")
    lines.append("      --) break ;;")
    if !valueOptions.isEmpty {
      lines.append("      \(valueOptions.joined(separator: "|"))) ((i++)) ;;")
    }
    lines.append("      -*) ;;")
    lines.append("      *) command=\"${COMP_WORDS[i]}\"; break ;;")
    lines.append("    esac")
    lines.append("  done")
    lines.append("  case \"$prev\" in")
    if !fileOptions.isEmpty {
      lines.append(
        "    \(fileOptions.joined(separator: "|"))) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;")
    }
    let otherValueOptions = valueOptions.filter { !fileOptions.contains($0) }
    if !otherValueOptions.isEmpty {
      lines.append("    \(otherValueOptions.joined(separator: "|"))) COMPREPLY=(); return ;;")
    }
    lines.append("  esac")
    lines.append("  local options=\"\" words=\"\"")
    lines.append("  case \"$command\" in")
    lines.append(
      "    \"\") options=\"\(spellings([root]))\"; words=\"\(root.subcommands.map(\.name).joined(separator: " "))\" ;;"
    )
    for command in root.subcommands {
      let words = command.arguments.flatMap(\.completions).joined(separator: " ")
      lines.append("    \(command.name)) options=\"\(spellings([root, command]))\"; words=\"\(words)\" ;;")
    }
    lines.append("  esac")
    lines.append("  if [[ \"$cur\" == -* ]]; then")
    lines.append("    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))")
    lines.append("  else")
    lines.append("    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))")
    lines.append("  fi")
    lines.append("}")
    lines.append("complete -F \(function) \(root.name)")
    return lines.joined(separator: "\n") + "\n"
  }

  private func spellings(_ chain: [CommandSpec]) -> String {
    chain.optionsInScope.flatMap { [$0.longSpelling] + ($0.shortSpelling.map { [$0] } ?? []) }
      .joined(separator: " ")
  }
}

// CommandLineKit is the package's own parser, help and completion because the package depends on
// the toolchain alone and fetches no package from outside; its API is not swift-argument-parser's.

/// Writes a bash completion script for a tree of ``CommandSpec``s (the tool and its
/// commands), generated from the same declarations the parser reads, so that completion
/// reads a line as ``CommandLineParser`` does: the value of a value option is never taken for a
/// command or an argument (`--db=s.db`, which bash splits at `=`, included), `--` ends the
/// options, each positional argument is offered once in order, and hidden commands are left out.
package struct BashCompletion: Sendable {
  package let root: CommandSpec

  package init(root: CommandSpec) { self.root = root }

  package var script: String {
    let function = "_" + root.name.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
    let commands = root.visibleSubcommands
    let all = [root] + commands
    let valueOptions = all.flatMap { $0.options.filter(\.takesValue) }
    let valueLongs = Set(valueOptions.map(\.longSpelling)).sorted()
    let valueLetters = Set(valueOptions.compactMap(\.short)).sorted().map(String.init)
    let fileOptions = all.flatMap { $0.options.filter(\.completesFiles) }
    let fileSpellings = Set(fileOptions.flatMap { [$0.longSpelling] + ($0.shortSpelling.map { [$0] } ?? []) })
      .sorted()

    var optionCases = [
      "      \"\") options=\"\(spellings([root]))\" ;;"
    ]
    var wordCases = [
      "      \":0\") words=\"\(commands.map(\.name).joined(separator: " "))\" ;;"
    ]
    for command in commands {
      optionCases.append("      \(command.name)) options=\"\(spellings([root, command]))\" ;;")
      for (position, argument) in command.arguments.enumerated() {
        let words =
          switch argument.completion {
          case .none: [String]()
          case .words(let words): words
          case .commandNames: commands.map(\.name)
          }
        guard !words.isEmpty else { continue }
        wordCases.append("      \(command.name):\(position)) words=\"\(words.joined(separator: " "))\" ;;")
      }
    }
    let valueLongCase =
      valueLongs.isEmpty ? "" : "\n        \(valueLongs.joined(separator: "|"))) expect=\"$w\" ;;"
    let valueLetterCase =
      valueLetters.isEmpty
      ? ""
      : "\n          \(valueLetters.joined(separator: "|"))) ((j == ${#w} - 1)) && expect=\"-${w:j:1}\"; break ;;"
    let fileCase =
      fileSpellings.isEmpty
      ? ""
      : "\n      \(fileSpellings.joined(separator: "|"))) \(function)_files \"$value\" \"$head\" \"$prefix\" ;;"

    return """
      # bash completion for \(root.name); load it with: source <(\(root.name) completion bash)
      # or save it as ${XDG_DATA_HOME:-~/.local/share}/bash-completion/completions/\(root.name)
      \(function)() {
        # The words as \(root.name) reads them: bash splits --db=s.db into --db, =, s.db
        # (COMP_WORDBREAKS); a word of break characters joins its neighbours again when
        # no blank separates them in COMP_LINE.
        local breaks="${COMP_WORDBREAKS//[[:space:]]/}" line="${COMP_LINE-}" argv=()
        local i w rest spaced separator previous=0 offset
        for ((i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++)); do
          w="${COMP_WORDS[i]}"
          rest="${line#"${line%%[![:space:]]*}"}"
          spaced=0
          [ "${#rest}" -ne "${#line}" ] && spaced=1
          if ((i == COMP_CWORD)) && [ -n "$line" ] && ((COMP_POINT < ${#COMP_LINE})); then
            offset=$((${#COMP_LINE} - ${#rest}))
            ((COMP_POINT - offset < ${#w})) && w="${w:0:$((COMP_POINT > offset ? COMP_POINT - offset : 0))}"
          fi
          if [[ "$rest" == "$w"* ]]; then line="${rest:${#w}}"; else line=""; fi
          separator=0
          [[ -n "$breaks" && -n "$w" && -z "${w//["$breaks"]/}" ]] && separator=1
          if ((i > 1 && !spaced && (separator || previous))); then
            argv[${#argv[@]} - 1]+="$w"
          else
            argv+=("$w")
          fi
          previous=$separator
        done
        local cword=$((${#argv[@]} - 1))
        local cur="${argv[cword]}" typed prefix=""
        # bash replaces only its own last word (the text after "=" in --db=s): complete
        # the whole word, then cut what lies before that.
        if (($# >= 2)); then
          typed="$2"
        else
          typed="${COMP_WORDS[COMP_CWORD]}"
          [[ -n "$breaks" && -n "$typed" && -z "${typed//["$breaks"]/}" ]] && typed=""
        fi
        [[ "$cur" == *"$typed" ]] && prefix="${cur%"$typed"}"

        # The command, how many arguments it has before this word, and whether this word
        # is the value of an option.
        local command="" count=0 ended=0 expect="" j
        for ((i = 1; i < cword; i++)); do
          w="${argv[i]}"
          if [ -n "$expect" ]; then
            expect=""
            [[ "$w" == -[!0-9]* ]] || continue
          fi
          if ((ended)); then
            count=$((count + 1))
          elif [ "$w" = -- ]; then
            ended=1
          elif [[ "$w" == --* ]]; then
            case "$w" in\(valueLongCase)
            esac
          elif [[ "$w" == -[!0-9]* ]]; then
            for ((j = 1; j < ${#w}; j++)); do
              case "${w:j:1}" in\(valueLetterCase)
              esac
            done
          elif [ -z "$command" ]; then
            command="$w"
          else
            count=$((count + 1))
          fi
        done

        COMPREPLY=()
        local option="" value="" head="" options="" words=""
        if [ -n "$expect" ] && [[ "$cur" != -[!0-9]* ]]; then
          option="$expect" value="$cur"
        elif ((!ended)) && [[ "$cur" == --*=* ]]; then
          option="${cur%%=*}" value="${cur#*=}" head="${cur%%=*}="
        elif ((!ended)) && [[ "$cur" == -* && "$cur" != -[0-9]* ]]; then
          case "$command" in
      \(optionCases.joined(separator: "\n"))
          esac
          mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
        elif ((!ended)) || [ -n "$command" ]; then
          case "$command:$count" in
      \(wordCases.joined(separator: "\n"))
          esac
          mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
        fi
        if [ -n "$option" ]; then
          case "$option" in\(fileCase)
          esac
        fi
        for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]="${COMPREPLY[i]#"$prefix"}"; done
      }
      # The file names that complete the value $1 of "$2$1" (head $2: "--db=" or ""), when
      # bash replaces what follows $3.
      \(function)_files() {
        local file
        compopt -o filenames 2>/dev/null
        while IFS= read -r file; do
          if [ "$2" != "$3" ] && [ -d "$file" ]; then
            # bash sees only the text after $3 ("--db=dir" unsplit, or "b" of "a:b") and
            # cannot tell it names a directory: add the slash here.
            file+="/"
            compopt -o nospace 2>/dev/null
          fi
          COMPREPLY+=("$2$file")
        done < <(compgen -f -- "$1")
      }
      complete -F \(function) \(root.name)

      """
  }

  private func spellings(_ chain: [CommandSpec]) -> String {
    chain.optionsInScope.flatMap { [$0.longSpelling] + ($0.shortSpelling.map { [$0] } ?? []) }
      .joined(separator: " ")
  }
}

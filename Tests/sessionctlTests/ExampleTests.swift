import Foundation
import TestSupport
import Testing

/// The `console` blocks of the sessionctl manual (docs/sessionctl.md) are one session: run here
/// in order, in a new home shown as `/home/demo`, with the built `sessionctl` first on the
/// `PATH`, each command prints what the article shows (stdout and stderr together, as a
/// terminal shows them) and exits with the status of its `(exit N)` line, else 0. The session
/// runs twice: without `XDG_DATA_HOME`, and with it set to a directory outside the home (as on
/// many desktops), shown as `/home/demo/.local/share`, so that a command that works only with
/// one of the two default locations fails.
///
/// Every run has its own times, so times are matched by position: the n-th distinct time the
/// article shows stands for the n-th distinct time the run printed, and a command that names
/// a time (`--since 7@TIME`) gets the run's. On a mismatch the issue holds the whole session as
/// this run printed it, to paste into the article.
@Suite(.timeLimit(.minutes(10))) struct ExampleTests {
  static let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../docs/sessionctl.md").standardized
    .path

  /// One command of a transcript: the text after `$ ` (and after `> ` on the lines that go on
  /// with it), the lines it prints, and its exit status.
  struct Step {
    var command: String
    var output: [String] = []
    var status: Int32 = 0
  }

  /// The steps of each ```console block of `text`, block by block.
  static func transcripts(_ text: String) -> [[Step]] {
    var blocks: [[Step]] = []
    var inside = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
      if !inside {
        if line == "```console" {
          inside = true
          blocks.append([])
        }
        continue
      }
      if line == "```" {
        inside = false
      } else if line.hasPrefix("$ ") {
        blocks[blocks.count - 1].append(Step(command: String(line.dropFirst(2))))
      } else if let last = blocks[blocks.count - 1].indices.last {
        if blocks[blocks.count - 1][last].output.isEmpty, line.hasPrefix("> ") || line == ">" {
          blocks[blocks.count - 1][last].command += "\n" + line.dropFirst(2)
        } else if let match = line.wholeMatch(of: #/\(exit (\d+)\)/#), let status = Int32(match.1) {
          blocks[blocks.count - 1][last].status = status
        } else {
          blocks[blocks.count - 1][last].output.append(line)
        }
      }
    }
    return blocks
  }

  /// The times of one side of the comparison, numbered in the order they first appear.
  final class Times {
    private(set) var numbers: [String: Int] = [:]
    private(set) var times: [String] = []

    /// `line` with each time replaced by its number.
    func numbered(_ line: String) -> String {
      line.replacing(Self.time) { match in
        let time = String(match.output)
        if let number = numbers[time] { return "<time \(number)>" }
        numbers[time] = times.count
        times.append(time)
        return "<time \(times.count - 1)>"
      }
    }

    /// `command` with each time of this side that `other` has a counterpart for replaced by it.
    func translated(_ command: String, to other: Times) -> String {
      command.replacing(Self.time) { match in
        guard let number = numbers[String(match.output)], number < other.times.count else {
          return String(match.output)
        }
        return other.times[number]
      }
    }

    static var time: Regex<Substring> { #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/# }
  }

  @Test(arguments: [false, true])
  func theCommandLineArticlesExamplesAreWhatSessionctlPrints(withXDGDataHome: Bool) async throws {
    let blocks = Self.transcripts(try String(contentsOfFile: Self.article, encoding: .utf8))
    #expect(blocks.count >= 5, "the article's console blocks")
    let sandbox = try Sandbox()
    let bin = URL(fileURLWithPath: Sandbox.sessionctl).deletingLastPathComponent().path
    sandbox.environment["PATH"] = bin + ":/usr/bin:/bin"
    // The data directory, shown as the default one; outside the home, so that a command that
    // writes `~/.local/share` instead finds nothing there.
    var shownPaths = [(sandbox.home, "/home/demo")]
    if withXDGDataHome {
      let dataHome = sandbox.path("data")
      try FileManager.default.createDirectory(atPath: dataHome, withIntermediateDirectories: false)
      chmod(dataHome, 0o700)
      sandbox.environment["XDG_DATA_HOME"] = dataHome
      shownPaths.insert((dataHome, "/home/demo/.local/share"), at: 0)
    }
    let shown = Times()
    let printed = Times()
    var session: [String] = []
    var mismatches = 0
    for block in blocks {
      session.append("```console")
      for step in block {
        let command = shown.translated(step.command, to: printed)
        let outcome = try await sandbox.runProgram(
          "/bin/bash", ["-c", "cd ~ && exec 2>&1\n" + command], environment: sandbox.environment)
        let output = outcome.lines.map { line in
          shownPaths.reduce(line) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        // Both sides numbered line by line, in the same order, so that the numbers agree.
        let expected = step.output.map(shown.numbered)
        let actual = output.map(printed.numbered)
        if actual != expected || outcome.status != step.status {
          mismatches += 1
          Issue.record(
            """
            $ \(command)
            printed (exit \(outcome.status)\(withXDGDataHome ? ", with XDG_DATA_HOME" : "")):
            \(output.joined(separator: "\n"))
            the article shows (exit \(step.status)):
            \(step.output.joined(separator: "\n"))
            """)
        }
        let lines = command.split(separator: "\n", omittingEmptySubsequences: false)
        session.append("$ " + lines[0])
        session += lines.dropFirst().map { $0.isEmpty ? ">" : "> " + $0 }
        session += output
        if outcome.status != 0 { session.append("(exit \(outcome.status))") }
      }
      session.append("```")
    }
    if mismatches > 0 {
      Issue.record("The session as this run printed it:\n\(session.joined(separator: "\n"))")
    }
  }
}

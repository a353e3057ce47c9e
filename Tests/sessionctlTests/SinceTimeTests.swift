import Foundation
import SystemKit
import TestSupport
import Testing

/// `--since CURSOR@TIME`: a time not in the form lines print it is a typing mistake (exit 65,
/// naming the option and what is wrong), never "the log was rewritten"; a well-formed time
/// that is not the stored one exits 67 naming both times; and an exit-67 message names the
/// cursor of the last line printed.
@Suite(.timeLimit(.minutes(5))) struct SinceTimeTests {
  @Test func aMalformedTimeIsInvalidInputAndAnotherTimeNamesBoth() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let stored = try #require(
      try await sandbox.run(db: db, ["--json", "history"]).jsonLines.first?["at"] as? String)
    #expect(stored.count == 24, "\(stored)")

    for (typed, why) in [
      (String(stored.dropLast(5)) + "Z", "no milliseconds"),  // seconds only
      ("TIME", "YYYY-MM-DDTHH:MM:SS.mmmZ"),  // a placeholder
      (stored.replacingOccurrences(of: "Z", with: "+00:00"), "in UTC"),
      (stored.lowercased(), "YYYY-MM-DDTHH:MM:SS.mmmZ"),
    ] {
      for command in ["history", "watch"] {
        let outcome = try await sandbox.run(db: db, [command, "--since", "1@" + typed, "--limit", "1"])
        #expect(outcome.status == 65, "\(typed): \(outcome)")
        #expect(outcome.stderr.contains("invalid time '1@\(typed)' for '--since'"), "\(outcome)")
        #expect(outcome.stderr.contains(why), "\(outcome)")
        #expect(!outcome.stderr.contains("rewritten"), "\(outcome)")
      }
    }
    let badCursor = try await sandbox.run(db: db, ["history", "--since", "x@" + stored])
    #expect(badCursor.status == 65, "\(badCursor)")
    #expect(badCursor.stderr.contains("invalid cursor 'x@\(stored)' for '--since'"), "\(badCursor)")

    // Well formed, one millisecond off: exit 67, saying which time was given and which is stored.
    let other = String(stored.dropLast(2)) + (stored.dropLast().last == "9" ? "8Z" : "9Z")
    for command in ["history", "watch"] {
      let outcome = try await sandbox.run(db: db, [command, "--since", "1@" + other, "--limit", "1"])
      #expect(outcome.status == 67, "\(outcome)")
      #expect(
        outcome.stderr.contains("committed at \(stored), not at the time given, \(other)"), "\(outcome)")
    }
    let exact = try await sandbox.run(db: db, ["history", "--since", "1@" + stored])
    #expect(exact.status == 0 && exact.stdout.isEmpty, "\(exact)")
  }

  /// A file renamed over the store under a running `watch`: the message names the cursor
  /// of the last line it printed (the subscriber's reads start one entry earlier, at the
  /// entry they check).
  @Test func theExit67MessageNamesTheLastCursorPrinted() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let other = sandbox.path("other.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    #expect(try await sandbox.run(db: other, ["login", "zed"]).status == 0)
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--since", "0"])
    defer { watch.kill(SIGKILL) }  // only when an expectation below throws: it has exited by then
    let first: String? = try await watch.readLine()
    #expect(first?.hasPrefix("1  ") == true, "\(String(describing: first))")
    #expect(try await sandbox.run(db: db, ["rename", "bob"]).status == 0)
    let second: String? = try await watch.readLine()
    #expect(second?.hasPrefix("2  ") == true, "\(String(describing: second))")
    #expect(rename(other, db) == 0)
    #expect(try await watch.wait(timeout: .seconds(60)) == 67)
    let message = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(message.contains("the history changed under cursor 2:"), "\(message)")
  }
}

import Foundation
import TestSupport
import Testing

@testable import sessionbench

/// `sessionbench --instructions`: which scenarios it counts, and the loops it runs under
/// callgrind (run here without valgrind, which CI does not install: the counts are for
/// people comparing builds, never asserted).
struct InstructionCountTests {
  @Test func theFlagCountsWritesReadsAndPagesAndRefusesOtherScenarios() throws {
    #expect(
      try Command.parse(["--instructions"]) == .instructions(scenarios: ["write-normal", "read", "history"]))
    #expect(try Command.parse(["--instructions", "read"]) == .instructions(scenarios: ["read"]))
    #expect(throws: (any Error).self) { try Command.parse(["--instructions", "idle"]) }
  }

  @Test(arguments: ["write-normal", "read", "history"], ["ours", "raw"])
  func eachLoopRuns(_ scenario: String, _ side: String) throws {
    let dir = try TemporaryDirectory()
    try InstructionCount.loop(scenario: scenario, side: side, count: 10, path: dir.file("s.db"))
    #expect(FileManager.default.fileExists(atPath: dir.file("s.db")))
  }
}

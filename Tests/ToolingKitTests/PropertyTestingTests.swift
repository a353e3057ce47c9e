import Foundation
import SystemKit
import TestSupport
import Testing
import ToolingKit

/// The seeded generator, the shrinker and the child-process line protocol.
struct PropertyTestingTests {
  /// A seed fixes the sequence: these are SplitMix64's published first outputs for seed 0,
  /// and the differential test's CI seeds rely on them staying so.
  @Test func aSeedFixesTheSequence() {
    var random = SplitMix64(seed: 0)
    #expect(random.next() == 0xE220_A839_7B1D_CDAF)
    #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
    var first = SplitMix64(seed: 42)
    var second = SplitMix64(seed: 42)
    #expect((0..<100).map { _ in first.below(7) } == (0..<100).map { _ in second.below(7) })
  }

  /// A failure that needs two elements, wherever they are, shrinks to exactly those two.
  @Test(arguments: [[3, 17], [0, 99], [50, 51]])
  func shrinksToTheStepsAFailureNeeds(_ needed: [Int]) {
    var shrinker = Shrinker(Array(0..<100))
    var tries = 0
    while let candidate = shrinker.candidate {
      tries += 1
      shrinker.record(failed: needed.allSatisfy(candidate.contains))
    }
    #expect(shrinker.shortest == needed)
    #expect(tries < 200)
  }

  @Test func neverProposesFewerThanTheMinimum() {
    var shrinker = Shrinker([1, 2, 3, 4, 5], minimumCount: 2)
    while let candidate = shrinker.candidate {
      #expect(candidate.count >= 2)
      shrinker.record(failed: true)
    }
    #expect(shrinker.shortest.count == 2)
    var empty = Shrinker([Int](), minimumCount: 0)
    #expect(empty.candidate == nil)
    empty.record(failed: true)
    #expect(empty.shortest.isEmpty)
  }

  /// The parent's side of the protocol against a shell that speaks it: `ready DETAIL`, an
  /// answer per command, and the end of its input ends it.
  @Test func aChildIsReadyAnswersAndEndsWithItsInput() async throws {
    let script = #"echo "ready 7"; while read -r command; do echo "got $command"; done"#
    let child = try await ChildProcess("/bin/sh", ["-c", script], environment: [:], stdin: .pipe)
    let (ready, answer, status) = try await onThreadOfItsOwn {
      (try child.awaitReady(), try child.ask("cpu"), child.finish())
    }
    #expect(ready == "7")
    #expect(answer == "got cpu")
    #expect(status == 0)
  }

  @Test func aChildThatSaysSomethingElseIsNotReady() async throws {
    let child = try await ChildProcess("/bin/sh", ["-c", "echo hello"], environment: [:])
    let failure = try await onThreadOfItsOwn { () -> ChildChannel.Failure? in
      do {
        try child.awaitReady()
        return nil
      } catch {
        return error as? ChildChannel.Failure
      }
    }
    #expect(failure?.description.contains("'hello' instead of ready") == true)
    await child.wait()
  }
}

import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SessionStorage

/// The cross-process watch looks at the file's path only after it woke subscribers for a
/// commit (off the delivery path), and still wakes them once more when that look finds the
/// file replaced: a replacement that comes together with a commit is not left to the poll.
@Suite(.timeLimit(.minutes(10))) struct WatchReplacementTests {
  /// What the watch did, in order.
  enum Step: Equatable { case signal, foundReplaced }

  @Test func aReplacementFoundWithACommitWakesSubscribersAfterIt() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let version = Atomic<Int64>(1)
    let replacedNow = Atomic<Bool>(false)
    let steps = Mutex<[Step]>([])
    let watch = CrossProcessWatch(
      path: path, pollInterval: .seconds(3_600),
      version: { _ in .init(onWriter: false, value: version.load(ordering: .acquiring)) },
      replaced: {
        // Once, as `OpenedFile.noticeReplacement()` says it.
        guard replacedNow.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        steps.withLock { $0.append(.foundReplaced) }
        return true
      },
      localWrites: { 0 })
    _ = watch.start { steps.withLock { $0.append(.signal) } }
    defer { watch.stop() }

    // A commit and a replacement at once, then a file event.
    version.store(2, ordering: .releasing)
    replacedNow.store(true, ordering: .releasing)
    #expect(FileManager.default.createFile(atPath: path + "-wal", contents: Data([1])))
    #expect(await eventually { steps.withLock { $0.contains(.foundReplaced) } })
    #expect(
      await eventually { steps.withLock { $0.last == .signal } }, "woken after the replacement was found")
    #expect(steps.withLock { $0.first } == .signal, "woken for the commit before the path was looked at")
  }
}

import Foundation
import Synchronization
import TestSupport
import Testing

@testable import FeedKit

/// Another file of the watched directory written hundreds of times a second (an app's log
/// beside the store) wakes the watcher on every write. It keeps its promises all the same:
/// the safety poll runs every poll interval, and the re-checks after an event of its own
/// files go on for their whole linger.
@Suite(.timeLimit(.minutes(10))) struct BusyDirectoryTests {
  /// Appends a line to `name` in `directory` every 2 ms on a thread of its own, until stopped.
  final class NoisyNeighbour: Sendable {
    private let stopped = Atomic(false)
    private let ended = Atomic(false)
    let writes = Atomic(0)

    init(directory: TemporaryDirectory, name: String = "app.log") {
      let path = directory.file(name)
      _ = FileManager.default.createFile(atPath: path, contents: nil)
      Thread.detachNewThread { [self] in
        defer { ended.store(true, ordering: .releasing) }
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        while !stopped.load(ordering: .acquiring) {
          try? handle.write(contentsOf: Data("a line of the app's log\n".utf8))
          writes.add(1, ordering: .relaxed)
          usleep(2_000)
        }
      }
    }

    /// Stops the thread and waits for it to end.
    func stop() async {
      stopped.store(true, ordering: .releasing)
      _ = await eventually { ended.load(ordering: .acquiring) }
    }
  }

  /// A commit whose file event was missed (or that raised none) is seen by the poll, within
  /// a few poll intervals, although the directory never stays quiet for one.
  @Test func thePollRunsWhileAnotherFileIsWrittenAllTheTime() async throws {
    let dir = try TemporaryDirectory()
    let neighbour = NoisyNeighbour(directory: dir)
    let changed = Atomic(false)
    let calls = Atomic(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .milliseconds(500),
      hasChanged: { changed.exchange(false, ordering: .acquiringAndReleasing) },
      onChange: { calls.add(1, ordering: .relaxed) })
    #expect(await eventually { neighbour.writes.load(ordering: .relaxed) > 100 })
    changed.store(true, ordering: .releasing)
    let seen = await eventually { calls.load(ordering: .relaxed) == 1 }
    watcher.stop()
    await neighbour.stop()
    #expect(seen, "a change the poll would find was not seen")
  }

  /// A commit that becomes visible 2 s after its last event (a slow fsync) is seen by the
  /// re-checks, which go on for 5 s after that event whatever else the directory does; the
  /// poll is an hour away.
  @Test func reChecksAfterAnEventGoOnForTheirWholeLingerWhileAnotherFileIsWritten() async throws {
    let dir = try TemporaryDirectory()
    let neighbour = NoisyNeighbour(directory: dir)
    let visibleAt = Mutex<ContinuousClock.Instant?>(nil)
    let calls = Atomic(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(3_600),
      hasChanged: {
        visibleAt.withLock { visibleAt in
          guard let at = visibleAt, ContinuousClock.now >= at else { return false }
          visibleAt = nil
          return true
        }
      },
      onChange: { calls.add(1, ordering: .relaxed) })
    #expect(await eventually { neighbour.writes.load(ordering: .relaxed) > 100 })
    visibleAt.withLock { $0 = ContinuousClock.now + .seconds(2) }
    try Data("frame".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    let seen = await eventually(timeout: .seconds(30)) { calls.load(ordering: .relaxed) == 1 }
    watcher.stop()
    await neighbour.stop()
    #expect(seen, "a commit visible within the linger was left to the poll")
  }
}

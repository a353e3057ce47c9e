import Foundation
import SessionStorage
import SystemKit

/// `release`: how long the thread that drops a store's last subscription is blocked. That
/// drop stops the cross-process watcher; it must not wait for the watcher's thread to wind
/// down (on the main actor that would be a dropped frame). The baseline is the floor of
/// such a hand-off: telling a raw thread blocked in `poll` on an inotify descriptor and a
/// pipe to stop (a `write` and a `close`), measured the same way.
enum ReleaseScenario {
  static func run(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("release")
    let store = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    let releases = scale.quick ? 50 : 500
    var ours = Sample()
    var raw = Sample()
    for _ in 0..<releases {
      var subscription: SessionSubscription? = try store.changes(from: .now)
      guard subscription?.wakeMode != .inProcess else { throw BenchError("no watcher started") }
      Monotonic.sleep(nanoseconds: 2_000_000)  // the watcher's thread is in poll by now
      let start = Monotonic.now()
      subscription = nil
      ours.latencies.append(Monotonic.now() - start)
      _ = subscription

      let watcher = try RawStoppableWatcher(directory: workspace.root)
      Monotonic.sleep(nanoseconds: 2_000_000)
      let rawStart = Monotonic.now()
      watcher.stop()
      raw.latencies.append(Monotonic.now() - rawStart)
      watcher.join()
    }
    let p99 = ours.p99
    return Outcome(
      measurements: Measurement.latency("release", ours: ours, baseline: raw).filter {
        $0.metric != .opsPerSecond
      },
      verdicts: [
        Verdict(
          scenario: "release", aim: "the releasing thread is blocked < 1 ms (p99)",
          measured: String(format: "%.1f µs", p99), met: p99 < 1000)
      ])
  }
}

/// A thread blocked in `poll` on an inotify descriptor and a pipe, as a minimal watcher.
private final class RawStoppableWatcher: Sendable {
  private let pipeEnds: (read: Int32, write: Int32)
  private let done = DispatchSemaphore(value: 0)

  init(directory: String) throws {
    do {
      pipeEnds = try Pipes.make()
    } catch {
      throw BenchError("pipe: \(error)")
    }
    let events: Int32
    do {
      events = try Inotify.watch(directory, for: UInt32(IN_MODIFY))
    } catch {
      throw BenchError("inotify: \(error)")
    }
    let (readEnd, done) = (pipeEnds.read, done)
    Thread.detachNewThread {
      var polled = [
        pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: events, events: Int16(POLLIN), revents: 0),
      ]
      _ = poll(&polled, 2, -1)
      close(events)
      close(readEnd)
      done.signal()
    }
  }

  /// What the releasing thread does: a byte and a close.
  func stop() {
    var byte: UInt8 = 1
    _ = write(pipeEnds.write, &byte, 1)
    close(pipeEnds.write)
  }

  /// Waits for the thread, outside the timed part.
  func join() { done.wait() }
}

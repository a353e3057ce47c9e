import FeedKit
import Foundation
import SessionStorage
import Synchronization
internal import SystemKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Wakes a store's subscribers when any client commits a change: a `LISTEN` connection of
/// its own on the schema's channel, read by a thread that polls its socket and a stop pipe.
/// Runs only while the store has subscribers (the ``Beacon``'s activate and deactivate).
///
/// A notification's payload is only a hint: subscribers re-read the log from their cursor.
/// So the thread signals on each notification, on every safety-poll timeout, and after
/// every reconnect (a notification may have been lost with the connection). A lost
/// connection is connected again at once, then with back-off (50 ms doubling to 2 s); from
/// the loss until it is listening again the mode is `.polling` and subscribers are woken at
/// each attempt.
final class PostgresListener: Sendable {
  private let place: PostgresPlace
  private let pollInterval: Duration
  private let running = Mutex<StopSignal?>(nil)

  init(place: PostgresPlace, pollInterval: Duration) {
    self.place = place
    self.pollInterval = pollInterval
  }

  /// Connects and listens, then starts the thread; it signals `beacon` (held weakly) and
  /// reports its mode to it. The first connection is made here, before the first
  /// subscription is handed out, so that its wake mode says whether notifications work
  /// (a server that cannot be reached now is reported as polling, with the reason).
  func start(_ beacon: Beacon) {
    let ends: (read: Int32, write: Int32)?
    do {
      ends = try Pipes.make()
    } catch {
      ends = nil
    }
    let stop = StopSignal(pipe: ends)
    running.withLock { $0 = stop }
    let loop = ListenLoop(
      place: place, pollMilliseconds: Int32(clamping: pollInterval.milliseconds), stopFD: ends?.read ?? -1,
      stop: stop, beacon: WeakBeacon(beacon), pollInterval: pollInterval)
    let first = Handoff(connection: loop.connect(backoff: ListenLoop.firstBackoff))
    let thread = Thread {
      loop.run(first.connection)
      stop.closePipe()
    }
    thread.name = "PostgresListener"
    thread.start()
  }

  /// Asks the thread to stop; it closes its connection as it exits.
  func stop() {
    running.withLock { $0.take() }?.request()
  }

  deinit { stop() }
}

/// The first connection, made on the subscribing thread and handed to the listener's
/// thread, which alone uses it from then on.
private struct Handoff: @unchecked Sendable {
  let connection: PQConnection?
}

/// The beacon, held weakly: a listener winding down must not keep the store alive.
private final class WeakBeacon: Sendable {
  private let beacon: Mutex<Weak>
  private struct Weak: @unchecked Sendable { weak var value: Beacon? }

  init(_ beacon: Beacon) { self.beacon = Mutex(Weak(value: beacon)) }

  var value: Beacon? { beacon.withLock { $0.value } }
}

/// The listener thread's loop; owns the `LISTEN` connection.
private struct ListenLoop: Sendable {
  let place: PostgresPlace
  let pollMilliseconds: Int32
  let stopFD: Int32
  let stop: StopSignal
  let beacon: WeakBeacon
  let pollInterval: Duration

  static let firstBackoff: Int32 = 50
  static let longestBackoff: Int32 = 2_000

  /// Listens on `connection` (nil: connects first) until asked to stop, reconnecting with
  /// back-off whenever the connection is lost.
  func run(_ connection: PQConnection?) {
    var backoff = Self.firstBackoff
    var connection = connection
    while !stop.isRequested {
      guard let listening = connection else {
        connection = connect(backoff: backoff)
        if connection == nil {
          if wait(for: -1, milliseconds: backoff) == .stop { return }
          backoff = min(backoff * 2, Self.longestBackoff)
        } else {
          backoff = Self.firstBackoff
        }
        continue
      }
      switch wait(for: listening.socket, milliseconds: pollMilliseconds) {
      case .stop: return
      case .timeout: beacon.value?.signal()  // the safety poll: a notification may be lost
      case .readable:
        do {
          if try listening.takeNotifications() > 0 { beacon.value?.signal() }
        } catch {
          connection = nil  // lost: reconnect at once, then back off
          let reason = (error as? SessionStorageError)?.message ?? "\(error)"
          beacon.value?.report(
            .polling(
              interval: .milliseconds(Self.firstBackoff),
              reason: "the LISTEN connection was lost (\(reason)); reconnecting"))
          beacon.value?.signal()
        }
      }
    }
  }

  /// Opens a connection and listens on it, reporting the mode either way and waking the
  /// subscribers (a change may have committed while nobody listened); nil when it failed.
  func connect(backoff: Int32) -> PQConnection? {
    do {
      let opened = try PQConnection(place, role: .listener)
      try opened.listen()
      beacon.value?.report(.notifications(pollInterval: pollInterval))
      beacon.value?.signal()
      return opened
    } catch {
      let reason = (error as? SessionStorageError)?.message ?? "\(error)"
      beacon.value?.report(
        .polling(
          interval: .milliseconds(backoff), reason: "the LISTEN connection failed (\(reason)); reconnecting"))
      beacon.value?.signal()
      return nil
    }
  }

  private enum Wake { case stop, timeout, readable }

  /// Waits until `socket` (when not -1) is readable, the stop pipe is, or the time passed.
  private func wait(for socket: Int32, milliseconds: Int32) -> Wake {
    if stop.isRequested { return .stop }
    var fds: [pollfd] = []
    if stopFD >= 0 { fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)) }
    if socket >= 0 { fds.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
    // Without a stop pipe (no descriptor left), the flag is looked at every 50 ms.
    let slice = stopFD >= 0 ? milliseconds : min(milliseconds, 50)
    guard let ready = try? retryingOnInterrupt({ poll(&fds, nfds_t(fds.count), slice) }) else { return .stop }
    if stopFD >= 0, fds[0].revents != 0 { return .stop }
    if stop.isRequested { return .stop }
    return ready > 0 ? .readable : .timeout
  }
}

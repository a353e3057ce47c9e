import FeedKit
import SessionStorage
import Synchronization
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Wakes a store's subscribers when any client commits a change: a `LISTEN` connection of
/// its own, read by a thread, while the store has subscribers. A notification is only a hint
/// (subscribers re-read from their cursor), so the thread also wakes them on every safety
/// poll and after every reconnect. How it reconnects, backs off and waits on a hot standby:
/// the "Faults" article.
final class PostgresListener: Sendable {
  private let place: PostgresPlace
  private let pollInterval: Duration
  private let running = Mutex<ThreadStopPipe?>(nil)

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
    let stop = ThreadStopPipe(pipe: ends)
    running.withLock { $0 = stop }
    let loop = ListenLoop(
      place: place, pollMilliseconds: Int32(clamping: pollInterval.milliseconds), stopFD: ends?.read ?? -1,
      stop: stop, beacon: WeakBeacon(beacon), pollInterval: pollInterval)
    let (connected, refused) = loop.connect(retryingIn: ListenLoop.firstBackoff)
    let first = Handoff(connection: connected)
    let delay = refused ? ListenLoop.refusedBackoff : ListenLoop.firstBackoff
    DetachedThread.start(name: "PostgresListen") {
      loop.run(first.connection, firstAttemptIn: delay)
      stop.closePipe()
    }
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
  let connection: ListenLoop.Connected?
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
  let stop: ThreadStopPipe
  let beacon: WeakBeacon
  let pollInterval: Duration

  static let firstBackoff: Int32 = 50
  static let longestBackoff: Int32 = 2_000
  /// How often a server that refused the login is asked again.
  static let refusedBackoff: Int32 = 10_000

  /// A connection of the listener.
  enum Connected {
    /// Listening on the store's channel.
    case listening(PQConnection)
    /// Connected to a hot standby, where `LISTEN` waits for a promotion.
    case standby(PQConnection)
    /// Behind a connection pooler, where `LISTEN` cannot work: polling, with no connection.
    case pooled
  }

  /// Listens on `connection` (nil: connects in `delay` milliseconds) until asked to stop,
  /// reconnecting with back-off whenever the connection is lost, and waking subscribers
  /// every poll meanwhile.
  func run(_ connection: Connected?, firstAttemptIn delay: Int32) {
    let clock = ContinuousClock()
    var backoff = Self.firstBackoff
    var connection = connection
    var nextAttempt = clock.now + .milliseconds(delay)
    while !stop.isRequested {
      switch connection {
      case nil:
        let now = clock.now
        guard now >= nextAttempt else {
          let left = Int32(clamping: (nextAttempt - now).milliseconds)
          switch wait(for: -1, milliseconds: min(pollMilliseconds, max(1, left))) {
          case .stop: return
          case .timeout, .readable: if left >= pollMilliseconds { beacon.value?.signal() }
          }
          continue
        }
        let (opened, refused) = connect(retryingIn: backoff)
        connection = opened
        if opened == nil {
          let delay = refused ? Self.refusedBackoff : backoff
          nextAttempt = clock.now + .milliseconds(delay)
          backoff = refused ? Self.firstBackoff : min(backoff * 2, Self.longestBackoff)
        } else {
          backoff = Self.firstBackoff
        }
      case .listening(let listening):
        switch wait(for: listening.socket, milliseconds: pollMilliseconds) {
        case .stop: return
        case .timeout: beacon.value?.signal()  // the safety poll: a notification may be lost
        case .readable:
          do {
            if try listening.takeNotifications() > 0 { beacon.value?.signal() }
          } catch {
            connection = nil  // lost: reconnect at once, then back off
            nextAttempt = clock.now
            report("the LISTEN connection was lost (\(Self.reason(error))); connecting again at once")
            beacon.value?.signal()
          }
        }
      case .pooled:
        switch wait(for: -1, milliseconds: pollMilliseconds) {
        case .stop: return
        case .timeout, .readable: beacon.value?.signal()
        }
      case .standby(let standby):
        switch wait(for: -1, milliseconds: pollMilliseconds) {
        case .stop: return
        case .timeout, .readable: beacon.value?.signal()
        }
        do {
          guard try standby.scalar("SELECT pg_is_in_recovery()") == "f" else { continue }
          try standby.listen()
          connection = .listening(standby)
          beacon.value?.report(.notifications(pollInterval: pollInterval))
          beacon.value?.signal()
        } catch {
          connection = nil
          nextAttempt = clock.now
          report("the connection to the standby was lost (\(Self.reason(error))); connecting again at once")
        }
      }
    }
  }

  /// Opens a connection and listens on it, reporting the mode either way and waking the
  /// subscribers (a change may have committed while nobody listened). Returns nil when it
  /// failed, and whether the server refused the login (it is asked again only slowly).
  func connect(retryingIn backoff: Int32) -> (Connected?, refused: Bool) {
    defer { beacon.value?.signal() }
    let opened: PQConnection
    do {
      opened = try PQConnection(place, role: .listener)
    } catch {
      let refused = (error as? SessionStorageError)?.code == .refused
      let delay = refused ? Self.refusedBackoff : backoff
      report(
        "the LISTEN connection failed (\(Self.reason(error))); connecting again in \(Duration.milliseconds(delay))"
      )
      return (nil, refused)
    }
    // Through a transaction pooler, LISTEN would register on a server connection that then
    // serves other clients (and notifications reach them, not this store): poll instead.
    if opened.isBehindPooler {
      report(
        "a connection pooler (such as PgBouncer) stands between the store and the server, and LISTEN does not "
          + "work through one in transaction pooling")
      return (.pooled, false)
    }
    do {
      try opened.listen()
    } catch {
      if (try? opened.scalar("SELECT pg_is_in_recovery()")) == "t" {
        report(
          "the server is a hot standby, in recovery, where LISTEN is not available; listening once it is promoted"
        )
        return (.standby(opened), false)
      }
      report("LISTEN failed (\(Self.reason(error))); connecting again in \(Duration.milliseconds(backoff))")
      return (nil, false)
    }
    beacon.value?.report(.notifications(pollInterval: pollInterval))
    return (.listening(opened), false)
  }

  /// Reports that subscribers are woken by the safety poll, and why.
  private func report(_ reason: String) {
    beacon.value?.report(.polling(interval: pollInterval, reason: reason))
  }

  private static func reason(_ error: any Error) -> String {
    (error as? SessionStorageError)?.message ?? "\(error)"
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
    let ready = pollForInput(&fds, milliseconds: slice, stopped: { stop.isRequested })
    if stopFD >= 0, fds[0].revents != 0 { return .stop }
    if stop.isRequested { return .stop }
    return ready > 0 ? .readable : .timeout
  }
}

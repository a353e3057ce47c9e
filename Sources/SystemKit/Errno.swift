#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The error number of a failed system call (`errno`), with the system's message as its
/// description; in the style of swift-system's `Errno`.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
  /// The number, e.g. `EINTR`.
  package var rawValue: Int32

  /// The error `rawValue`, e.g. the result of a call that returns its error (`posix_spawn`).
  package init(rawValue: Int32) { self.rawValue = rawValue }

  /// This thread's `errno`: read it right after the call that failed.
  package static var current: Errno { Errno(rawValue: errno) }

  /// The system's message (`strerror`), e.g. "No such file or directory".
  package var description: String { String(cString: strerror(rawValue)) }

  /// `EINTR`: a signal arrived before the call did anything; call it again.
  package static let interrupted = Errno(rawValue: EINTR)
  /// `EAGAIN`: a non-blocking descriptor is not ready.
  package static let wouldBlock = Errno(rawValue: EAGAIN)
  /// `EPIPE`: the reader of a pipe is gone.
  package static let brokenPipe = Errno(rawValue: EPIPE)
}

/// The result of a system call that returns -1 and sets `errno` when it fails.
/// - Throws: ``Errno/current`` when `result` is -1.
package func valueOrErrno<Value: FixedWidthInteger>(_ result: Value) throws(Errno) -> Value {
  guard result == -1 else { return result }
  throw Errno.current
}

/// Calls `call` (a system call that returns -1 and sets `errno` when it fails) again for as
/// long as it fails with `EINTR`, and returns its result.
/// - Throws: the ``Errno`` of a failure other than `EINTR`.
package func retryingOnInterrupt<Value: FixedWidthInteger>(_ call: () -> Value) throws(Errno) -> Value {
  while true {
    do {
      return try valueOrErrno(call())
    } catch .interrupted {
      continue
    }
  }
}

/// Writes all of `bytes` to `descriptor`: again after a partial write or an interruption,
/// and after waiting for room when the descriptor is non-blocking.
/// - Throws: the ``Errno`` of any other failure (``Errno/brokenPipe`` when a pipe's reader
///   is gone).
package func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws(Errno) {
  var offset = 0
  while offset < bytes.count {
    do {
      offset += try retryingOnInterrupt {
        bytes.withUnsafeBytes { write(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
      }
    } catch .wouldBlock {
      var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
      _ = try retryingOnInterrupt { poll(&ready, 1, -1) }
    }
  }
}

import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Pipes that no child process inherits by accident. Swift's Glibc has no `pipe2`, so a
/// pipe is made and then marked close-on-exec, and a process started in between would
/// inherit it; both steps happen under one lock, and ChildProcess starts its processes
/// under the same lock.
package enum Pipes {
  private static let lock = Mutex(())

  /// A new pipe, both ends close-on-exec.
  /// - Throws: the ``Errno`` of `pipe` (`EMFILE` when the process has no descriptor left).
  package static func make() throws(Errno) -> (read: Int32, write: Int32) {
    try lock.withLock { _ throws(Errno) in try makeUnlocked() }
  }

  /// Runs `body` while no pipe of ``make()`` is between its creation and its close-on-exec
  /// flag: a process `body` starts inherits none of them. `body` may make pipes with
  /// `makePipe`, the same as ``make()`` under the lock already held.
  package static func withNoPipeBeingMade<Value: ~Copyable, Failure: Error>(
    _ body: (_ makePipe: () throws(Errno) -> (read: Int32, write: Int32)) throws(Failure) -> Value
  ) throws(Failure) -> Value {
    try lock.withLock { _ throws(Failure) in try body(makeUnlocked) }
  }

  private static func makeUnlocked() throws(Errno) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    _ = try valueOrErrno(pipe(&ends))
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return (ends[0], ends[1])
  }
}

#if os(Linux)
  import Glibc

  /// Linux's file notifications: a descriptor that reports changes to the files of a
  /// directory, and the layout of the records read from it.
  package enum Inotify {
    /// The events that tell a file of the directory changed: written, created, deleted,
    /// renamed into it, closed after writing.
    package static let fileChanges = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_CLOSE_WRITE)

    /// A non-blocking, close-on-exec descriptor that reports `events` in `directory`.
    /// - Throws: the call that failed (`inotify_init1`, `inotify_add_watch`) and its
    ///   ``Errno``.
    package static func watch(_ directory: String, for events: UInt32 = fileChanges) throws(Failure) -> Int32
    {
      let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
      guard fd >= 0 else { throw Failure(call: "inotify_init1", errno: .current) }
      guard inotify_add_watch(fd, directory, events) >= 0 else {
        let failure = Failure(call: "inotify_add_watch", errno: .current)
        close(fd)
        throw failure
      }
      return fd
    }

    /// A call of ``watch(_:for:)`` failed.
    package struct Failure: Error, CustomStringConvertible {
      /// `inotify_init1` or `inotify_add_watch`.
      package var call: String
      /// Why.
      package var errno: Errno
      /// What failed, and what to do (see ``SystemLimits/explain(_:call:)``).
      package var description: String { SystemLimits.explain(errno.rawValue, call: call) }
    }

    /// Reads every record pending on the non-blocking descriptor `fd`; true when one names
    /// a file in `names`.
    package static func drain(_ fd: Int32, names: Set<String>) -> Bool {
      var relevant = false
      withUnsafeTemporaryAllocation(byteCount: 4096, alignment: MemoryLayout<inotify_event>.alignment) {
        buffer in
        while let count = try? retryingOnInterrupt({ read(fd, buffer.baseAddress, buffer.count) }), count > 0
        {
          forEachName(in: UnsafeRawBufferPointer(rebasing: buffer[..<count])) { name in
            if names.contains(name) { relevant = true }
          }
        }
      }
      return relevant
    }

    /// Calls `body` with the file name of each record in `records` (as one `read` returned
    /// them): an `inotify_event` header, then `len` bytes of the name padded with NULs.
    static func forEachName(in records: UnsafeRawBufferPointer, _ body: (String) -> Void) {
      let headerSize = MemoryLayout<inotify_event>.size
      var offset = 0
      while offset + headerSize <= records.count {
        let header = records.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
        let nameStart = offset + headerSize
        let nameEnd = min(nameStart + Int(header.len), records.count)
        body(String(decoding: records[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self))
        offset = nameStart + Int(header.len)
      }
    }
  }
#endif

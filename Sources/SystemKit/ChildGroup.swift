import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The process group the children of ``ChildProcess`` join, so that none outlives this
/// process, however it ends: a hang guard, Ctrl-C, a CI timeout, SIGKILL.
///
/// A guardian (`/bin/sh`) leads the group; its standard input is the read end of a pipe
/// whose only write end this process holds, close-on-exec, so no child inherits it. When
/// this process ends, the kernel closes that end, the guardian reads end of file and sends
/// SIGKILL to the whole group: every child, and every child's child that stayed in the
/// group. (`PR_SET_PDEATHSIG` would fire when the spawning *thread* ends, and spawns run on
/// short-lived threads.) The group is not the terminal's: Ctrl-C reaches this process, and
/// its children through the guardian once it has ended.
package enum ChildGroup {
  private struct State {
    var enabled = true
    var guardian: pid_t?
    /// The pipe's write end, never written, closed only by the end of this process.
    var lifeline: Int32 = -1
  }

  private static let state = Mutex(State())

  /// Children start in this process's own group, as `posix_spawn` does by default: for a
  /// program whose children may outlive it (`sessionctl`'s hooks). Call it first thing.
  package static func keepChildrenInOwnGroup() { state.withLock { $0.enabled = false } }

  /// The group a new child joins, the guardian started the first time (and again if it
  /// died); nil when disabled or when the guardian cannot be started. Called under
  /// `Pipes`' lock, with its `makePipe`.
  static func group(_ makePipe: () throws(Errno) -> (read: Int32, write: Int32)) -> pid_t? {
    state.withLock { state in
      guard state.enabled else { return nil }
      if let guardian = state.guardian {
        var status: Int32 = 0
        if waitpid(guardian, &status, WNOHANG) == 0 { return guardian }
        // Someone ended the guardian: start another.
        close(state.lifeline)
        (state.guardian, state.lifeline) = (nil, -1)
      }
      guard let ends = try? makePipe() else { return nil }
      guard let guardian = startGuardian(reading: ends.read) else {
        close(ends.read)
        close(ends.write)
        return nil
      }
      close(ends.read)
      (state.guardian, state.lifeline) = (guardian, ends.write)
      return guardian
    }
  }

  /// Forgets a guardian whose group a spawn could not join, so the next spawn starts another.
  static func forget(_ group: pid_t) {
    state.withLock { state in
      guard state.guardian == group else { return }
      close(state.lifeline)
      (state.guardian, state.lifeline) = (nil, -1)
    }
  }

  /// This process's open descriptors, from `/proc/self/fd` (none where there is no such directory).
  private static func openDescriptors() -> [Int32] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    var found: [Int32] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
      }
      if let descriptor = Int32(name), descriptor != dirfd(directory) { found.append(descriptor) }
    }
    return found
  }

  /// Starts `sh -c 'read line; kill -KILL 0'` in a group of its own, reading `input`.
  private static func startGuardian(reading input: Int32) -> pid_t? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, input, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    // It lives as long as this process: it keeps no descriptor of this one open.
    for descriptor in openDescriptors() where descriptor > 2 {
      posix_spawn_file_actions_addclose(&actions, descriptor)
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
    let words: [String] = ["sh", "-c", "read line; kill -KILL 0"]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let path: String = "PATH=/usr/bin:/bin"
    let environment: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
    defer { for pointer in environment { free(pointer) } }
    var pid: pid_t = 0
    return posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environment) == 0 ? pid : nil
  }
}

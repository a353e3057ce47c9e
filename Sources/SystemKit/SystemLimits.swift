import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Turns the `errno` of a failed system call into a sentence that names the limit that
/// was reached and how to raise it, for errors and wake-mode reasons.
package enum SystemLimits {
  /// `call` failed with `code`: what happened, and what to do.
  package static func explain(_ code: Int32, call: String) -> String {
    let what = "\(call) failed: \(Errno(rawValue: code))"
    switch code {
    case EMFILE:
      let files = openFiles.map { " of \($0)" } ?? ""
      let instances =
        call.hasPrefix("inotify")
        ? "; or all fs.inotify.max_user_instances\(procValue("fs/inotify/max_user_instances")) inotify instances "
          + "are in use: raise it with `sysctl fs.inotify.max_user_instances=N`"
        : ""
      return
        "\(what): this process may have reached its limit\(files) open files: raise it with `ulimit -n`\(instances)"
    case ENFILE:
      return "\(what): the system's open-file table is full (fs.file-max\(procValue("fs/file-max")))"
    case ENOSPC where call.hasPrefix("inotify"):
      return
        "\(what): all fs.inotify.max_user_watches\(procValue("fs/inotify/max_user_watches")) watches are in use: "
        + "raise it with `sysctl fs.inotify.max_user_watches=N`"
    default:
      return what
    }
  }

  /// The soft limit of open files of this process (`ulimit -n`), when it can be read.
  package static var openFiles: UInt64? {
    var limit = rlimit()
    return getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 ? UInt64(limit.rlim_cur) : nil
  }

  /// " (N)" for a value under `/proc/sys/`, or nothing when it cannot be read (harmless:
  /// it only completes a sentence, and without descriptors it cannot be read at all).
  private static func procValue(_ name: String) -> String {
    (try? String(contentsOfFile: "/proc/sys/" + name, encoding: .utf8))
      .map { " (\($0.trimmingCharacters(in: .whitespacesAndNewlines)))" } ?? ""
  }

  #if os(Linux)
    private static let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
  #else
    private static let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
  #endif
}

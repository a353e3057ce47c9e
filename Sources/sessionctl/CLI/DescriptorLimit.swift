import Foundation
import SystemKit

/// The process's open files, checked before the runtime starts its threads: near the
/// limit, the runtime's own thread pool traps (it cannot read /proc), and SQLite cannot
/// open a store. Refusing up front gives a sentence instead.
enum DescriptorLimit {
  /// A sentence when the soft limit is below `minimum`, or fewer than `free` descriptors
  /// are left under it (inherited ones count), or nil.
  static func refusal(minimum: UInt64, free: Int) -> String? {
    if let limit = SystemLimits.openFiles, limit < minimum {
      return "this process may open only \(limit) files; sessionctl needs at least \(minimum): "
        + "raise the limit with `ulimit -n`"
    }
    // Count what is left by opening up to `free` descriptors, then closing them.
    var opened: [Int32] = []
    defer { for fd in opened { close(fd) } }
    while opened.count < free {
      let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { break }
      opened.append(fd)
    }
    guard opened.count < free else { return nil }
    return
      "only \(opened.count) of this process's \(SystemLimits.openFiles.map(String.init) ?? "") open files "
      + "are free (it inherited the others); sessionctl needs \(free): close them or raise the limit with `ulimit -n`"
  }
}

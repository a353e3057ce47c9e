import FeedKit

/// The process's limit of open files, checked before the runtime starts its threads.
enum DescriptorLimit {
  /// A sentence when the soft limit is below `minimum`, or nil.
  static func refusal(minimum: UInt64) -> String? {
    guard let limit = SystemLimits.openFiles, limit < minimum else { return nil }
    return "this process may open only \(limit) files; sessionctl needs at least \(minimum): "
      + "raise the limit with `ulimit -n`"
  }
}

import Dispatch
import FeedKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension SessionStore {
  /// How durable a commit is.
  public enum Durability: Sendable, Hashable {
    /// `synchronous=FULL`: a commit survives power loss. The default.
    case full
    /// `synchronous=NORMAL`: faster; the last commits may be lost on power loss (never on a crash).
    case normal

    /// The value of `PRAGMA synchronous`.
    var pragmaValue: String {
      switch self {
      case .full: "FULL"
      case .normal: "NORMAL"
      }
    }
  }

  /// How a store opens its file.
  public struct FileOptions: Sendable {
    /// How durable a commit is.
    public var durability: Durability
    /// How long a write waits for another writer before failing with `SQLITE_BUSY`.
    public var busyTimeout: Duration
    /// The origin recorded on this store's writes; `external` is reserved.
    public var origin: String
    /// Open without writing: no creation, no migration, no writes.
    public var readOnly: Bool
    /// How often the cross-process watcher re-checks the file when no file event came: the
    /// safety net behind inotify, and the only mechanism where inotify cannot be set up.
    /// Instances on one file share one watcher: the first instance's interval applies.
    public var safetyPollInterval: Duration
    /// Whether a store that creates its file also creates the missing directories above it,
    /// with mode 0700 (only the owner may enter). Off by default: a mistyped path is an
    /// error that names the missing directory, not a new directory tree.
    /// ``init(location:options:)`` turns it on for the default location.
    public var createsMissingDirectories: Bool
    /// Whether the file is a private copy that nothing else has open or writes (a backup
    /// being verified): read-only, it is read as immutable, taking no lock and making no
    /// `-wal` or `-shm` beside it.
    var readsPrivateCopy = false

    /// Creates options; the origin defaults to the process's name.
    public init(
      durability: Durability = .full, busyTimeout: Duration = .seconds(5),
      origin: String = ProcessInfo.processInfo.processName, readOnly: Bool = false,
      safetyPollInterval: Duration = .seconds(1), createsMissingDirectories: Bool = false
    ) {
      self.durability = durability
      self.busyTimeout = busyTimeout
      self.origin = origin
      self.readOnly = readOnly
      self.safetyPollInterval = safetyPollInterval
      self.createsMissingDirectories = createsMissingDirectories
    }
  }
}

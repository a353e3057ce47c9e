import FeedKit

/// One verification of ``SessionStore/check()``; a backend makes those that apply to it.
public enum StoreCheck: String, Sendable, Hashable, CaseIterable {
  /// SQLite's `PRAGMA integrity_check`.
  case integrity
  /// The migration records, their checksums and `user_version`.
  case migrations
  /// The tables, indexes and triggers (and, on PostgreSQL, the functions) are exactly the
  /// ones the applied migrations create.
  case schema
  /// Each account is the state its newest change left (the 1.x session row, in a file not
  /// migrated yet).
  case state
  /// Every stored time is in the feed's format.
  case times
  /// Cursors have no hole above the compaction point, and the head never moved back.
  case continuity
  /// Every cursor lies between 1 and the largest integer.
  case cursors
  /// The stored username meets the rules of ``Username``.
  case username
}

/// What one verification of ``SessionStore/check()`` found, whichever backend made it.
public struct CheckResult: Sendable, Hashable {
  /// Whether a verification passed.
  public enum Verdict: String, Sendable, Hashable {
    /// Nothing wrong was found.
    case passed
    /// Something is wrong (or the verification could not run): ``CheckResult/detail`` says what.
    case failed
  }

  /// Which verification ran.
  public var check: StoreCheck
  /// Whether it passed.
  public var verdict: Verdict
  /// What was found, in a sentence.
  public var detail: String

  /// Creates a result.
  package init(_ check: StoreCheck, _ verdict: Verdict, detail: String) {
    self.check = check
    self.verdict = verdict
    self.detail = detail
  }

  /// Runs one verification on its own: its verdict and detail, or, when it cannot run (a
  /// table edited away by hand, a server error), a failure that gives the reason, so that
  /// the other verifications still run.
  package static func running(_ check: StoreCheck, _ body: () throws -> (passed: Bool, detail: String))
    -> CheckResult
  {
    do {
      let (passed, detail) = try body()
      return CheckResult(check, passed ? .passed : .failed, detail: detail)
    } catch {
      let reason = (error as? SessionStorageError)?.message ?? "\(error)"
      return CheckResult(check, .failed, detail: "could not check: \(reason)")
    }
  }
}

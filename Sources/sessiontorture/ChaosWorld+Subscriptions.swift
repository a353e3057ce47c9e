import FeedKit
import Foundation
import SessionStorage
import ToolingKit

/// The subscription steps: a subscriber started from each kind of start and resumed after
/// its last entry, each start checked against the model.
extension ChaosWorld {
  /// Compares a FeedError with the one the model expects: the case and cursors (the
  /// reasons are prose).
  static func sameKind(_ error: FeedError, _ expected: FeedError) -> Bool {
    switch (error, expected) {
    case (.historyRewritten(let cursor, _), .historyRewritten(let expected, _)): cursor == expected
    default: error == expected
    }
  }

  func subscribe(_ index: Int, _ kind: ChaosStep.Subscription) throws {
    do {
      try subscribeAsModelled(index, kind)
    } catch let error as FeedError {
      throw TortureFailure(
        "subscribing (\(kind.rawValue)) threw \(error), which the model does not expect (oldest "
          + "\(model.firstAvailable), head \(model.head))")
    }
  }

  func subscribeAsModelled(_ index: Int, _ kind: ChaosStep.Subscription) throws {
    guard let store = instance(index) else { return }
    let head = model.head
    func requireStart(_ cursor: Cursor, _ expected: Int64, _ what: String) throws {
      guard cursor.value == expected else {
        throw TortureFailure(
          "changes(from: \(what)) starts after \(cursor), the model says after \(expected)")
      }
    }
    let follower: ChaosFollower
    switch kind {
    case .now:
      let changes = try store.changes(from: .now)
      try requireStart(changes.cursor, head, ".now")
      follower = ChaosFollower(
        nextFollower(), kind: .now, source: .task(ChaosSubscriber(following: changes)), start: head,
        serial: nil, time: nil)
    case .beginning:
      let expected = model.beginning
      let changes = try store.changes(from: .beginning)
      try requireStart(changes.cursor, expected, ".beginning")
      follower = ChaosFollower(
        nextFollower(), kind: .beginning, source: .task(ChaosSubscriber(following: changes)), start: expected,
        serial: nil,
        time: nil)
    case .afterRecent:
      let recent = max(0, head - Int64(index))
      switch model.start(after: recent) {
      case .error(let expected):
        do {
          let changes = try store.changes(from: .after(Cursor(recent)))
          throw TortureFailure(
            "changes(from: .after(\(recent))) starts after \(changes.cursor), the model expects \(expected)")
        } catch let error as FeedError {
          guard Self.sameKind(error, expected) else {
            throw TortureFailure(
              "changes(from: .after(\(recent))) threw \(error), the model expects \(expected)")
          }
          return
        }
      case .after(let start, let serial):
        let changes = try store.changes(from: .after(Cursor(recent)))
        try requireStart(changes.cursor, start, ".after(\(recent))")
        follower = ChaosFollower(
          nextFollower(), kind: .afterRecent, source: .task(ChaosSubscriber(following: changes)),
          start: start, serial: serial,
          time: serial.flatMap { _ in model.log[start]?.time })
      }
    case .snapshot:
      let feed = try store.snapshotAndChanges()
      try requireStart(feed.cursor, head, "snapshotAndChanges()")
      follower = ChaosFollower(
        nextFollower(), kind: .snapshot, source: .task(ChaosSubscriber(following: feed)), start: head,
        serial: nil, time: nil,
        snapshot: ChaosState(feed.state))
    case .values:
      follower = ChaosFollower(
        nextFollower(), kind: .values, source: .task(ChaosSubscriber(following: store.values())), start: head,
        serial: nil,
        time: nil)
    }
    followers.append(follower)
  }

  /// Resumes a cancelled follower after its last entry: with `.afterEntry` (cursor and
  /// time) where one is known, so that a rewritten history is refused; `.after` otherwise.
  func resume(_ index: Int) throws {
    let resumable = followers.filter { $0.cancelled && $0.kind != .values && !$0.isProcess }
    guard !resumable.isEmpty, let store = instance(index) else { return }
    let follower = resumable[index % resumable.count]
    // What it delivered before its cancellation is verified first: the resume goes on after it.
    let problems = follower.verify(&model, bound: bound)
    guard problems.isEmpty else { throw TortureFailure(problems.joined(separator: "; ")) }
    let last = follower.last
    let expected: ChaosModel.Start
    let start: FeedStart
    if let serial = follower.lastSerial, let time = follower.lastTime {
      expected = model.start(afterEntry: last, serial: serial)
      start = .afterEntry(Cursor(last), time: ChaosClock.date(time))
    } else {
      expected = model.start(after: last)
      start = .after(Cursor(last))
    }
    switch expected {
    case .error(let error):
      do {
        let changes = try store.changes(from: start)
        throw TortureFailure(
          "resuming after \(last) starts after \(changes.cursor), the model expects \(error)")
      } catch let thrown as FeedError {
        guard Self.sameKind(thrown, error) else {
          throw TortureFailure("resuming after \(last) threw \(thrown), the model expects \(error)")
        }
      }
      retire(follower)
      followers.removeAll { $0 === follower }
    case .after(let cursor, let serial):
      let changes: SessionSubscription
      do {
        changes = try store.changes(from: start)
      } catch let error as FeedError {
        throw TortureFailure(
          "resuming after \(last) threw \(error), which the model does not expect (oldest "
            + "\(model.firstAvailable), head \(model.head))")
      }
      guard changes.cursor.value == cursor else {
        throw TortureFailure("resuming after \(last) starts after \(changes.cursor)")
      }
      follower.resume(with: ChaosSubscriber(following: changes), serial: serial)
    }
  }
}

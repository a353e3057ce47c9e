import Foundation
import Testing

@testable import sessiontorture

/// The chaos model's range for the oldest cursor after a retention by age, on histories
/// written by hand: it must hold every oldest cursor the feed trigger can leave, for every
/// clock reading within the write's window, whatever the write did after reading it.
@Suite struct ChaosModelTests {
  /// A model with a 1000 ms age limit whose log holds an entry at each of `times` (ms), in
  /// cursor order, each committed by a write whose window is `windows[i]`.
  static func model(_ times: [Int64], windows: [ClosedRange<Int64>]) -> ChaosModel {
    var model = ChaosModel(initial: ChaosState(username: nil, isLoggedIn: false, updatedAt: 0), at: 0)
    model.policy = ChaosPolicy(maxAgeMilliseconds: 1000)
    for (index, (time, window)) in zip(times, windows).enumerated() {
      // One account: it joins, active, then is renamed and signs in and out.
      let entry = ChaosEntry(
        cursor: model.head + 1, origin: "test", account: 1, before: model.state,
        after: ChaosState(username: "u\(index)", isLoggedIn: index % 2 == 0, updatedAt: time),
        wasActive: index > 0, isActive: true, serial: index, availableAt: 0)
      model.commit(entry)
      model.retainByAge(window: window, at: 0)
    }
    return model
  }

  /// A write that reads its clock early and then takes longer than the age limit (a Python
  /// client whose fsyncs each take 100 ms, on a loaded machine): at 101,050 ms it deletes
  /// the entry of 100,000 ms; its window ends at 102,100 ms, where even its own entry is older
  /// than the limit. The trigger never deletes the entry it wrote, so the oldest may be that
  /// one. (With "no entry young enough" taken as "none deleted", the model says 1, and a
  /// chaos run failed: "the oldest cursor is 51, the model says 50".)
  @Test func aWriteLongerThanTheAgeLimitMayDeleteUpToItsOwnEntry() {
    var model = Self.model([100_000, 101_050], windows: [99_990...100_010, 100_990...102_100])
    #expect(model.firstAvailable == 1)
    #expect(model.firstAvailableAtMost == 2)
    #expect(model.learn(firstAvailable: 2, at: 0) == nil)
  }

  /// Never past the entry just written.
  @Test func theEntryJustWrittenIsNeverDeletedByAge() {
    var model = Self.model([100_000, 101_050], windows: [99_990...100_010, 100_990...102_100])
    #expect(model.learn(firstAvailable: 3, at: 0) != nil)
  }

  /// An entry whose time the model does not know (retention deleted it before the model read
  /// the file) may be young or old: the model may neither require it deleted nor kept.
  /// Here the entry of 100,000 ms is old for the third write, the second is of unknown time.
  @Test func anEntryOfUnknownTimeMayBeKeptOrDeleted() {
    let times: [Int64] = [100_000, ChaosState.unknown, 101_500]
    let windows: [ClosedRange<Int64>] = [99_990...100_010, 100_900...101_100, 101_490...101_510]
    var kept = Self.model(times, windows: windows)
    #expect(kept.learn(firstAvailable: 2, at: 0) == nil)
    var deleted = Self.model(times, windows: windows)
    #expect(deleted.learn(firstAvailable: 3, at: 0) == nil)
  }
}

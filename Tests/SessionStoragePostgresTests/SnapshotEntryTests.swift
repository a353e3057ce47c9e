import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

@testable import FeedKit

/// A subscription that starts from a snapshot (or `.now`) keeps the entry at its cursor,
/// read in the snapshot's statement, so that its reads can notice a history rewritten under
/// it: the same entry `history` returns, or none once compaction removed it.
@Suite(.timeLimit(.minutes(10))) struct SnapshotEntryTests {
  @Test func aSnapshotCarriesTheEntryAtItsCursor() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "test"))
    #expect(try store.snapshotAndChanges().changes.last == nil, "no change yet")
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    let newest = try #require(try store.history().last)
    #expect(newest.cursor == Cursor(2))
    #expect(try store.snapshotAndChanges().changes.last == newest)
    #expect(try store.changes(from: .now).last == newest)
    _ = try store.compact(keepingLast: 0)
    let afterCompaction = try store.snapshotAndChanges()
    #expect(afterCompaction.cursor == Cursor(2))
    #expect(afterCompaction.changes.last == nil)
  }
}

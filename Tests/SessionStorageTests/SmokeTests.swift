import FeedKit
import Foundation
import Testing

@testable import SessionStorage

@Suite struct SmokeTests {
  @Test func loginWritesOneEntry() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("s.db"), options: .init(origin: "test"))
    let changes = try store.changes(from: .now)
    let entry = try #require(try store.login(username: "alice"))
    #expect(entry.origin == "test")
    #expect(entry.events == [.usernameChanged(from: nil, to: "alice"), .loggedIn(username: "alice")])
    var iterator = changes.makeAsyncIterator()
    let received = try await iterator.next()
    #expect(received?.cursor == entry.cursor)
    #expect(try store.login(username: "alice") == nil)
    #expect(try store.state.username == "alice")
  }
}

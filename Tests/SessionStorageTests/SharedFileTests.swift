import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// One process opening one file several times: the instances share one set of
/// connections, and nothing another process does can make an acknowledged write vanish.
@Suite(.timeLimit(.minutes(10))) struct SharedFileTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// How the second instance names the file.
  enum Spelling: String, CaseIterable, Sendable {
    case samePath, symbolicLink, relativePath
  }

  /// Who comes, writes and goes while the first instance is open.
  enum Visitor: String, CaseIterable, Sendable {
    case sqlite3Shell, sessionctl
  }

  func spelled(_ spelling: Spelling) throws -> String {
    switch spelling {
    case .samePath: return path
    case .symbolicLink:
      let link = dir.file("link.db")
      try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
      return link
    case .relativePath:
      let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
      return String(repeating: "../", count: depth) + path.dropFirst()
    }
  }

  func visit(_ visitor: Visitor, username: String) async throws {
    switch visitor {
    case .sqlite3Shell:
      try await ProcessRunner.sqlite3(path, "UPDATE session SET username = '\(username)'")
    case .sessionctl:
      let result = try await ProcessRunner.run(
        ProcessRunner.product("sessionctl"), ["--db", path, "rename", username])
      #expect(result.status == 0, "\(result.stderr)")
    }
  }

  /// A second instance (released or held), another process that
  /// writes and exits, then 20 acknowledged writes through the first instance. A fresh
  /// process must see every one of them.
  @Test(arguments: Spelling.allCases, Visitor.allCases)
  func aSecondInstanceThenAnotherProcessLosesNoAcknowledgedWrite(spelling: Spelling, visitor: Visitor)
    async throws
  {
    for holdSecond in [false, true] {
      try? FileManager.default.removeItem(atPath: dir.file("link.db"))
      for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
      let first = try SessionStore(path: path)
      try await first.logIn(as: "one")
      var held: SessionStore?
      do {
        let second = try SessionStore(path: try spelled(spelling))
        try await second.rename(to: "two")
        if holdSecond { held = second }
      }
      try await visit(visitor, username: "visitor")
      var acknowledged: [Int64] = []
      for index in 0..<20 {
        await acknowledged.append(try #require(try first.rename(to: "n\(index)")).cursor.value)
      }
      let seen = try await ProcessRunner.sqlite3(
        path,
        "SELECT username FROM session; SELECT group_concat(seq) FROM session_changes WHERE seq >= \(acknowledged[0])"
      )
      #expect(
        seen == "n19\n" + acknowledged.map(String.init).joined(separator: ",") + "\n",
        "second instance \(holdSecond ? "held" : "released")")
      #expect(try first.state.username == "n19")
      withExtendedLifetime(held) {}
    }
  }

  /// The descriptors this process has open on `file` (the database itself, not -wal/-shm).
  func descriptors(on file: String) -> Int {
    let target = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter {
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == target
    }.count
  }

  /// A store opens its second connection when it is first needed (the reader after writes
  /// only, the writer after reads only). By then the path may name another file, which a
  /// connection opened by path would read or write: it is refused, and that file keeps
  /// what it held.
  @Test func aConnectionOpenedAfterTheFileWasReplacedIsRefused() async throws {
    let other = dir.file("other.db")
    try SessionStore(path: other).blocking.logIn(as: "elsewhere")
    let writesOnly = try SessionStore(path: path, options: .init(origin: "test"))
    try writesOnly.blocking.logIn(as: "alice")
    #expect(rename(other, path) == 0)
    let read = try #require(throws: SessionStorageError.self) { try writesOnly.state }
    #expect(read.code == .fileReplaced, "\(read)")

    let second = dir.file("second.db")
    let secondOther = dir.file("second-other.db")
    try SessionStore(path: second).blocking.logIn(as: "bob")
    try SessionStore(path: secondOther).blocking.logIn(as: "elsewhere")
    do {
      let readsOnly = try SessionStore(path: second, options: .init(origin: "test"))
      #expect(try readsOnly.state.username == "bob")
      #expect(rename(secondOther, second) == 0)
      let write = try #require(throws: SessionStorageError.self) {
        try readsOnly.blocking.logIn(as: "mallory")
      }
      #expect(write.code == .fileReplaced, "\(write)")
    }
    #expect(try await ProcessRunner.sqlite3(second, "SELECT username FROM accounts") == "elsewhere\n")
  }

  @Test func instancesOnOneFileShareOneSetOfConnections() throws {
    let first = try SessionStore(path: path)
    try first.blocking.logIn(as: "alice")
    let alone = descriptors(on: path)
    #expect(alone > 0)
    let second = try SessionStore(path: try spelled(.symbolicLink), options: .init(origin: "second"))
    let third = try SessionStore(path: try spelled(.relativePath), options: .init(readOnly: true))
    #expect(descriptors(on: path) == alone)
    // Each instance writes with its own origin through the shared writer.
    #expect(try second.blocking.rename(to: "bob")?.origin == "second")
    #expect(try third.state.username == "bob")
    #expect(throws: SessionStorageError.self) { try third.blocking.logOut() }
    withExtendedLifetime((first, second, third)) {}
  }

  @Test func theFileIsClosedWhenTheLastInstanceIsReleased() async throws {
    do {
      let store = try SessionStore(path: path)
      try await store.logIn(as: "alice")
      let changes = try store.changes(from: .now)
      do {
        let second = try SessionStore(path: path)
        try await second.rename(to: "bob")
      }
      #expect(descriptors(on: path) > 0)
      #expect(try await first(1, of: changes).map(\.after.username) == ["bob"])
    }
    #expect(descriptors(on: path) == 0)
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
  }

  /// A read-only instance opened first, then a writable one: the writable one can write,
  /// and the read-only one still refuses.
  @Test func aWritableInstanceAfterAReadOnlyOneWrites() throws {
    try SessionStore(path: path).blocking.logIn(as: "alice")
    let reader = try SessionStore(path: path, options: .init(readOnly: true))
    let writer = try SessionStore(path: path, options: .init(durability: .normal))
    #expect(try writer.blocking.rename(to: "bob") != nil)
    #expect(try reader.state.username == "bob")
    #expect(throws: SessionStorageError.self) { try reader.blocking.rename(to: "carol") }
  }
}

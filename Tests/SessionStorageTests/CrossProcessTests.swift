import FeedKit
import Foundation
import ProcessKit
import TestSupport
import Testing

@testable import SessionStorage

/// Other processes: they see our writes, we see theirs, and several write at once.
@Suite(.timeLimit(.minutes(2))) struct CrossProcessTests {
  static let torture = ProcessRunner.product("sessiontorture")
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  func spawn(_ arguments: [String]) throws -> ChildProcess {
    try ChildProcess(
      Self.torture, arguments, environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe,
      stderr: .file(dir.file("stderr-\(UUID().uuidString)")))
  }

  @Test func aSubscriberInAChildProcessSeesOurWrites() throws {
    let store = try SessionStore(path: path, options: .init(origin: "parent"))
    let child = try spawn(["subscribe", "--db", path, "--count", "3"])
    #expect(try child.readLine() == "ready")
    let cursors = try [store.logIn(as: "alice"), store.rename(to: "bob"), store.logOut()].map {
      try #require($0).cursor.description
    }
    let lines = try (0..<3).map { _ in try child.readLine() }
    #expect(lines == cursors.map { "\($0) parent" })
    #expect(try child.wait(timeout: .seconds(30)) == 0)
  }

  @Test func weSeeAChildProcessWrites() async throws {
    let store = try SessionStore(path: path)
    let changes = try store.changes(from: .now)
    let child = try spawn(["write", "--db", path, "--count", "5", "--origin", "child"])
    let acknowledged = try (0..<5).compactMap { _ in try child.readLine() }
    #expect(try child.wait(timeout: .seconds(30)) == 0)
    let received = try await first(5, of: changes)
    #expect(received.map(\.cursor.description) == acknowledged)
    #expect(Set(received.map(\.origin)) == ["child"])
  }

  @Test func fourProcessesWritingAtOnceOnANewFileGiveConsecutiveCursors() throws {
    // No file yet: the four race to create it too.
    let writers = try (0..<4).map {
      try spawn(["write", "--db", path, "--count", "250", "--origin", "w\($0)"])
    }
    var acknowledged: [Int64] = []
    for writer in writers {
      while let line = try writer.readLine(timeout: .seconds(60)) {
        acknowledged += Int64(line).map { [$0] } ?? []
      }
      #expect(
        try writer.wait(timeout: .seconds(60)) == 0, "a writer failed (SQLITE_BUSY would end it with 1)")
    }
    #expect(acknowledged.sorted() == Array(1...1000))
    let store = try SessionStore(path: path)
    #expect(try store.history(from: .beginning, limit: 2000).map(\.cursor.value) == Array(1...1000))
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
  }
}

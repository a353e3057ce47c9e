import FeedKit
import Foundation
import SystemKit
import TestSupport
import Testing

@testable import SessionStorage

/// Other processes: they see our writes, we see theirs, and several write at once.
@Suite(.timeLimit(.minutes(10))) struct CrossProcessTests {
  static let torture = ProcessRunner.product("sessiontorture")
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  func spawn(_ arguments: [String]) async throws -> ChildProcess {
    try await ChildProcess(
      Self.torture, arguments, environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe,
      stderr: .file(dir.file("stderr-\(UUID().uuidString)")))
  }

  @Test func aSubscriberInAChildProcessSeesOurWrites() async throws {
    let store = try SessionStore(path: path, options: .init(origin: "parent"))
    let child = try await spawn(["subscribe", "--db", path, "--count", "3"])
    #expect(try await child.readLine() == "ready")
    let cursors = try await [store.logIn(as: "alice"), store.rename(to: "bob"), store.logOut()].map {
      try #require($0).cursor.description
    }
    var lines: [String?] = []
    for _ in 0..<3 { lines.append(try await child.readLine()) }
    #expect(lines == cursors.map { "\($0) parent" })
    #expect(try await child.wait(timeout: .seconds(30)) == 0)
  }

  /// A subscriber whose every `poll(2)` fails (`ENOMEM`, injected with strace) cannot see
  /// file events, and still receives each change of another process, at the safety poll:
  /// the watcher waits the interval out instead of ending.
  @Test func aSubscriberWhosePollFailsStillReceivesChanges() async throws {
    guard Strace.isAvailable else {
      Issue.record("strace is not installed (.ci/run installs it)")
      return
    }
    let store = try SessionStore(path: path, options: .init(origin: "parent"))
    let child = try await ChildProcess(
      Strace.executable,
      ["-f", "-qq", "-o", "/dev/null", "-e", "inject=poll:error=ENOMEM", Self.torture]
        + ["subscribe", "--db", path, "--count", "2", "--safety-poll", "0.2"],
      environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe, stderr: .file(dir.file("stderr-strace")))
    #expect(try await child.readLine(timeout: .seconds(60)) == "ready")
    let cursors = try await [store.logIn(as: "alice"), store.logOut()].map {
      try #require($0).cursor.description
    }
    // The safety poll runs every 0.2 s; the limits are hang guards for a loaded machine.
    var lines: [String?] = []
    for _ in 0..<2 { lines.append(try await child.readLine(timeout: .seconds(60))) }
    #expect(lines == cursors.map { "\($0) parent" })
    #expect(try await child.wait(timeout: .seconds(30)) == 0)
  }

  @Test func weSeeAChildProcessWrites() async throws {
    let store = try SessionStore(path: path)
    let changes = try store.changes(from: .now)
    let child = try await spawn(["write", "--db", path, "--count", "5", "--origin", "child"])
    var acknowledged: [String] = []
    for _ in 0..<5 { if let line = try await child.readLine() { acknowledged.append(line) } }
    #expect(try await child.wait(timeout: .seconds(30)) == 0)
    let received = try await first(5, of: changes)
    #expect(received.map(\.cursor.description) == acknowledged)
    #expect(Set(received.map(\.origin)) == ["child"])
  }

  @Test func fourProcessesWritingAtOnceOnANewFileGiveConsecutiveCursors() async throws {
    // No file yet: the four race to create it too.
    var writers: [ChildProcess] = []
    for index in 0..<4 {
      writers.append(try await spawn(["write", "--db", path, "--count", "250", "--origin", "w\(index)"]))
    }
    var acknowledged: [Int64] = []
    for writer in writers {
      while let line = try await writer.readLine(timeout: .seconds(60)) {
        acknowledged += Int64(line).map { [$0] } ?? []
      }
      #expect(
        try await writer.wait(timeout: .seconds(60)) == 0, "a writer failed (SQLITE_BUSY would end it with 1)"
      )
    }
    #expect(acknowledged.sorted() == Array(1...1000))
    let store = try SessionStore(path: path)
    #expect(try store.history(from: .beginning, limit: 2000).map(\.cursor.value) == Array(1...1000))
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
  }
}

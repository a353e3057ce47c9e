import Foundation
import Synchronization
import TestSupport
import Testing
import ToolingKit

@testable import SessionStorage

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The registry a signal handler removes staged files from (``StagedFiles``): each test
/// uses a registry of its own, never the process's, whose ``StagedFiles/removeAll()`` would
/// end every staging in the test process.
@Suite struct StagedFilesTests {
  /// How far two threads got.
  final class Steps: Sendable {
    let opening = Atomic<Bool>(false)
    let removed = Atomic<Bool>(false)
  }

  /// A signal handler runs on whichever thread the kernel picks, and cannot stop the others:
  /// when another thread is making a staged file (its name kept, its `open(2)` not yet
  /// returned), `removeAll` waits for it and removes it, instead of removing nothing and
  /// leaving the file that `open` makes a moment later.
  @Test func removingOnAnotherThreadWaitsForAFileBeingMade() async throws {
    let directory = try TemporaryDirectory()
    let name = directory.file(".b.db.backup-ABCDEF")
    let registry = StagedFiles.Registry()
    let steps = Steps()
    async let made = onThreadOfItsOwn {
      try registry.create(name, path: "b.db", consequence: "nothing was written") { name in
        steps.opening.store(true, ordering: .sequentiallyConsistent)
        // Made after removeAll returned, or after a second while it waits.
        for _ in 0..<100 where !steps.removed.load(ordering: .sequentiallyConsistent) { usleep(10_000) }
        return StagedFile.makePrivately(name)
      }
    }
    async let removal: Void = onThreadOfItsOwn {
      while !steps.opening.load(ordering: .sequentiallyConsistent) { usleep(1_000) }
      registry.removeAll()
      steps.removed.store(true, ordering: .sequentiallyConsistent)
    }
    let (descriptor, _, _) = try await made
    _ = try await removal
    #expect(descriptor >= 0)
    close(descriptor)
    #expect(!FileManager.default.fileExists(atPath: name), "the file made while removeAll ran is removed")
  }

  /// A handler that interrupts the thread making the file (its own) does not wait for it:
  /// it removes the name, which `open(2)` made or not.
  @Test func removingOnTheThreadMakingTheFileDoesNotWait() async throws {
    let directory = try TemporaryDirectory()
    let name = directory.file(".b.db.backup-ABCDEF")
    let registry = StagedFiles.Registry(creationWait: 60_000)
    let start = ContinuousClock.now
    let (descriptor, _, _) = try await onThreadOfItsOwn {
      try registry.create(name, path: "b.db", consequence: "nothing was written") { name in
        let descriptor = StagedFile.makePrivately(name)
        registry.removeAll()  // as a signal arriving right after open(2) returned
        return descriptor
      }
    }
    close(descriptor)
    #expect(ContinuousClock.now - start < .seconds(30))
    #expect(!FileManager.default.fileExists(atPath: name))
  }

  /// After `removeAll` (the process is ending) nothing more is made, and a name kept until
  /// then is removed with its companions.
  @Test func nothingIsMadeAfterRemoval() async throws {
    let directory = try TemporaryDirectory()
    let first = directory.file(".b.db.backup-AAAAAA")
    let registry = StagedFiles.Registry()
    let (descriptor, _, slot) = try registry.create(
      first, path: "b.db", consequence: "nothing was written", with: StagedFile.makePrivately)
    #expect(descriptor >= 0 && slot != nil)
    close(descriptor)
    for suffix in ["-journal", "-wal", "-shm"] {
      #expect(FileManager.default.createFile(atPath: first + suffix, contents: Data()))
    }
    registry.removeAll()
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    let second = directory.file(".b.db.backup-BBBBBB")
    #expect(throws: SessionStorageError.self) {
      _ = try registry.create(
        second, path: "b.db", consequence: "nothing was written", with: StagedFile.makePrivately)
    }
    #expect(!FileManager.default.fileExists(atPath: second))
  }
}

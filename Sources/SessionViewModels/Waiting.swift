import Observation

/// A view model whose state a test can wait for: ``waitUntil(timeout:_:)``.
///
/// Its properties change on the main actor as the feed delivers commits, a moment after the
/// write that caused them returns: a test that reads a property right after a write reads
/// the state before it. It waits for the state it expects instead, without sleeping or
/// polling.
@MainActor
public protocol ObservableViewModel: AnyObject, Observable {}

extension ObservableViewModel {
  /// Returns as soon as `condition` holds for the view model, checking it now and again
  /// after each change of a property it read (Observation's `withObservationTracking`).
  ///
  /// ```swift
  /// try await store.rename(to: "bob")
  /// try await model.waitUntil { $0.greeting == "Hello, bob" }
  /// ```
  ///
  /// Waiting leaves the main actor free. `timeout` only guards against a hang: pick it far
  /// beyond what a loaded machine needs.
  /// - Parameters:
  ///   - timeout: how long to wait at most.
  ///   - condition: what the view model must show; it reads the view model's properties.
  /// - Throws: ``ViewModelWaitTimeout`` when `condition` still does not hold after
  ///   `timeout`; `CancellationError` when the waiting task is cancelled.
  public func waitUntil(timeout: Duration = .seconds(60), _ condition: (Self) -> Bool) async throws {
    let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let guardian = Task {
      try? await Task.sleep(for: timeout)
      continuation.finish()
    }
    defer {
      guardian.cancel()
      continuation.finish()
    }
    // `onChange` runs once, as the first tracked property is about to change: each check
    // tracks again. The change itself is made on the main actor right after, so it is there
    // when the next check runs.
    func holds() -> Bool {
      withObservationTracking {
        condition(self)
      } onChange: {
        continuation.yield()
      }
    }
    if holds() { return }
    for await _ in changes {
      if holds() { return }
    }
    try Task.checkCancellation()
    throw ViewModelWaitTimeout(timeout: timeout)
  }
}

/// A view model did not reach the state a test waited for in time
/// (``ObservableViewModel/waitUntil(timeout:_:)``).
public struct ViewModelWaitTimeout: Error, Sendable, Equatable, CustomStringConvertible {
  /// How long the test waited.
  public let timeout: Duration

  /// A sentence for the test's failure.
  public var description: String { "the view model did not reach the expected state within \(timeout)" }
}

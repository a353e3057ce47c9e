/// Runs `body`, then `cleanup`, whether `body` returned or threw: a `defer` whose work is
/// awaited (a `defer` block cannot await, and blocking in one holds a thread of the
/// cooperative pool).
public func withCleanup<Value>(
  isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Value,
  cleanup: () async -> Void
) async throws -> Value {
  let value: Value
  do {
    value = try await body()
  } catch {
    await cleanup()
    throw error
  }
  await cleanup()
  return value
}

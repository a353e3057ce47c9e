/// A benchmark that could not run or produced an inconsistent result.
struct BenchError: Error, CustomStringConvertible {
  let description: String

  init(_ description: String) { self.description = description }
}

/// A check or a step of a scenario that could not be carried out (exit 1); what the checks
/// find is counted as problems instead.
struct TortureFailure: Error, CustomStringConvertible {
  let description: String

  init(_ description: String) { self.description = description }
}

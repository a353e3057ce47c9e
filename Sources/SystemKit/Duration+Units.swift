extension Duration {
  /// This duration in whole milliseconds, rounded toward zero and clamped to `Int64` (for
  /// `poll` timeouts).
  package var milliseconds: Int64 { whole(perSecond: 1_000) }

  /// This duration in whole microseconds, rounded toward zero and clamped to `Int64` (for
  /// `usleep`).
  package var microseconds: Int64 { whole(perSecond: 1_000_000) }

  private func whole(perSecond units: Int64) -> Int64 {
    let (seconds, attoseconds) = components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: units)
    let fraction = attoseconds / (1_000_000_000_000_000_000 / units)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (sum, sumOverflow) = scaled.addingReportingOverflow(fraction)
    return sumOverflow ? (seconds < 0 ? .min : .max) : sum
  }
}

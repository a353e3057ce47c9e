/// Picks the spelling a user most likely meant, for "Did you mean …?" suggestions.
package enum NearestMatch {
  /// The candidate closest to `typed`, or nil when none is close enough.
  ///
  /// Close means an edit distance (insertions, deletions, substitutions and swaps of two
  /// neighbours) of at most 1 for names up to 3 characters and 2 beyond, or that the
  /// candidate starts with what was typed (`--lim` → `--limit`). Leading dashes are
  /// ignored when measuring; ties go to the earlier candidate.
  package static func suggestion(for typed: String, among candidates: [String]) -> String? {
    let bare = strippingDashes(typed)
    guard !bare.isEmpty else { return nil }
    let limit = bare.count <= 3 ? 1 : 2
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
      let name = strippingDashes(candidate)
      var distance = editDistance(bare, name)
      if distance > limit, bare.count >= 2, name.hasPrefix(bare) { distance = limit }
      if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
    }
    return best?.candidate
  }

  /// The optimal-string-alignment distance between two strings, by characters.
  package static func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let a = Array(lhs)
    let b = Array(rhs)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          value = min(value, table[i - 2][j - 2] + 1)
        }
        table[i][j] = value
      }
    }
    return table[a.count][b.count]
  }

  private static func strippingDashes(_ text: String) -> String {
    String(text.drop { $0 == "-" })
  }
}

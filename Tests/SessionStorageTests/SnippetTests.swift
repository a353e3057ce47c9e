import Foundation
import TestSupport
import Testing

/// Every ```swift block of the README, verbatim, in a new package that depends on this one by
/// path, as a newcomer would paste them: the `Package.swift` block is that package's
/// manifest, every other block is the `main.swift` of an executable of its own, and all of
/// them compile without a warning. The library and view-model snippets also run to the end
/// against a default location in a fresh home.
@Suite(.timeLimit(.minutes(30))) struct SnippetTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

  /// A ```swift block of the README.
  struct Block {
    /// The `NAME` of a `<!-- snippet:NAME -->` line right before the block, else `line` and
    /// the line number of its opening fence.
    var name: String
    var code: String

    /// The manifest fragment: the block that declares the dependency on this package.
    var isManifest: Bool { code.contains(".package(url:") }
    /// A block that needs SwiftUI, which Linux does not have.
    var needsSwiftUI: Bool { code.split(separator: "\n").contains("import SwiftUI") }
  }

  /// Every ```swift block of the README, in order.
  static func blocks() throws -> [Block] {
    let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
    let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var found: [Block] = []
    var index = 0
    while index < lines.count {
      defer { index += 1 }
      guard lines[index] == "```swift" else { continue }
      var name = "line\(index + 1)"
      if index > 0, lines[index - 1].hasPrefix("<!-- snippet:"), lines[index - 1].hasSuffix(" -->") {
        name = String(lines[index - 1].dropFirst("<!-- snippet:".count).dropLast(" -->".count))
      }
      var code: [String] = []
      index += 1
      while index < lines.count, lines[index] != "```" {
        code.append(lines[index])
        index += 1
      }
      found.append(Block(name: name, code: code.joined(separator: "\n") + "\n"))
    }
    return found
  }

  /// What of a SwiftUI block Linux can compile: everything but its `View`s and `App`s (each a
  /// top-level `struct NAME: View {` or `@main struct NAME: App {` up to the `}` that ends it
  /// at the start of a line), with `import Observation` (which SwiftUI re-exports) for
  /// `import SwiftUI`.
  static func withoutViews(_ code: String) -> String {
    var kept: [Substring] = []
    var skipping = false
    for line in code.split(separator: "\n", omittingEmptySubsequences: false) {
      if skipping {
        if line == "}" { skipping = false }
        continue
      }
      if line.wholeMatch(of: #/(@main )?struct \w+: (View|App) \{.*/#) != nil {
        skipping = !line.hasSuffix("}")
        continue
      }
      kept.append(line == "import SwiftUI" ? "import Observation" : line)
    }
    return kept.joined(separator: "\n")
  }

  /// The manifest of the new package: the README's `Package.swift` block inside a `Package`,
  /// with a path dependency on this checkout for the `url:` line (as the README says to write
  /// for a local checkout), and one executable target more for each other block.
  static func manifest(_ fragment: String, targets: [String]) -> String {
    var dependency = fragment.split(separator: "\n").map { line in
      line.contains(".package(url:") ? "  .package(path: \"\(root)\")," : String(line)
    }.joined(separator: "\n")
    if !dependency.hasSuffix(",") { dependency += "," }  // more arguments follow
    let products = ["SessionStorage", "SessionViewModels", "SessionStoragePostgres"].map {
      ".product(name: \"\($0)\", package: \"SessionStorage\")"
    }.joined(separator: ", ")
    let more = targets.map { "  .executableTarget(name: \"\($0)\", dependencies: [\(products)])," }
    return """
      // swift-tools-version:6.0
      import PackageDescription

      let package = Package(
        name: "adopter",
        platforms: [.macOS(.v15), .iOS(.v18)],
      \(dependency)
        swiftLanguageModes: [.v6]
      )
      package.targets += [
      \(more.joined(separator: "\n"))
      ]

      """.replacingOccurrences(of: "package: \"SessionStorage\"", with: "package: \"\(packageIdentity)\"")
  }

  @Test func everySwiftBlockOfTheReadmeCompilesAndTheSnippetsRun() async throws {
    let blocks = try Self.blocks()
    let manifests = blocks.filter(\.isManifest)
    try #require(manifests.count == 1, "one Package.swift block")
    let programs = blocks.filter { !$0.isManifest }
    #expect(Set(programs.map(\.name)).isSuperset(of: ["library", "viewmodels"]))
    #expect(programs.contains { $0.needsSwiftUI }, "the SwiftUI block")
    #expect(programs.count >= 4, "\(programs.map(\.name))")

    let dir = try TemporaryDirectory()
    let package = dir.file("adopter")
    // The manifest block's own target: a program that imports the products it declares.
    let own = package + "/Sources/MyApp"
    try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
    try "import SessionStorage\nimport SessionViewModels\n".write(
      toFile: own + "/main.swift", atomically: true, encoding: .utf8)
    for block in programs {
      let target = package + "/Sources/\(block.name)"
      try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
      #if os(Linux)
        let code = block.needsSwiftUI ? Self.withoutViews(block.code) : block.code
        let file = "main.swift"
      #else
        let code = block.code
        let file = block.needsSwiftUI ? "App.swift" : "main.swift"
      #endif
      try code.write(toFile: target + "/" + file, atomically: true, encoding: .utf8)
    }
    try Self.manifest(manifests[0].code, targets: programs.map(\.name))
      .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)

    // SwiftPM leaves a lock file per package and cache in TMPDIR: this run's go with `dir`.
    let build = try await ProcessRunner.runDetached(
      "/usr/bin/env", ["swift", "build", "--package-path", package], environment: ["TMPDIR": dir.path],
      timeout: .seconds(1500))
    #expect(build.status == 0, "\(build.stdout)\n\(build.stderr)")
    guard build.status == 0 else { return }
    let warnings = (build.stdout + "\n" + build.stderr).split(separator: "\n").filter {
      $0.contains("warning:") && $0.contains(package + "/")
    }
    #expect(warnings.isEmpty, "\(warnings.joined(separator: "\n"))")

    // The library snippet, in a new home without XDG_DATA_HOME and in one with it set (to a
    // directory outside the home): its file is where its comment says, either way.
    var environment: [String: String] = [:]
    for withDataHome in [false, true] {
      let home = dir.file(withDataHome ? "home-xdg" : "home")
      try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
      let dataHome = withDataHome ? dir.file("data") : home + "/.local/share"
      if withDataHome {
        try FileManager.default.createDirectory(atPath: dataHome, withIntermediateDirectories: true)
      }
      environment = ["HOME": home, "XDG_DATA_HOME": withDataHome ? dataHome : ""]
      let library = try await ProcessRunner.runDetached(
        package + "/.build/debug/library", [], environment: environment, timeout: .seconds(300))
      #expect(library.status == 0, "\(environment): \(library.stderr)")
      let lines = library.stdout.split(separator: "\n").map(String.init)
      #expect(lines.first?.hasPrefix("snapshot at 0: (none), logged out, updated ") == true, "\(lines)")
      #expect(
        lines.contains { $0.hasSuffix("MyApp       add alice, login alice, activate alice") }, "\(lines)")
      #expect(lines.contains { $0.hasPrefix("Alice, logged out, updated ") }, "\(lines)")
      #expect(lines.contains("refused: it hides a right-to-left override"), "\(lines)")
      #expect(
        lines.last?.hasPrefix(#"{"#) == true && lines.last?.contains(#""type":"change""#) == true, "\(lines)")
      #expect(
        FileManager.default.fileExists(atPath: dataHome + "/sessionctl/session.db"), "\(environment)")
    }

    let models = try await ProcessRunner.runDetached(
      package + "/.build/debug/viewmodels", [], environment: environment, timeout: .seconds(300))
    #expect(models.status == 0, "\(models.stderr)")
    #expect(models.stdout == "Hello, alice\nsigned out\nHello, mark\nSigned out\n")
  }

  /// The identity SwiftPM gives a path dependency: its directory's name, lowercased.
  static var packageIdentity: String { URL(fileURLWithPath: root).lastPathComponent.lowercased() }
}

import Foundation
import TestSupport
import Testing

/// The README's library and view-model snippets, verbatim, in a new package that depends on
/// this one by path, as a newcomer would paste them: they compile, and they run to the end
/// against a default location in a fresh home.
@Suite(.timeLimit(.minutes(30))) struct SnippetTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

  /// The ```swift block after each `<!-- snippet:NAME -->` line of the README.
  static func snippets() throws -> [String: String] {
    let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
    var found: [String: String] = [:]
    var lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
    while let line = lines.popFirst() {
      guard line.hasPrefix("<!-- snippet:"), line.hasSuffix(" -->") else { continue }
      let name = String(line.dropFirst("<!-- snippet:".count).dropLast(" -->".count))
      guard lines.popFirst() == "```swift" else { continue }
      var code: [String] = []
      while let next = lines.popFirst(), next != "```" { code.append(next) }
      found[name] = code.joined(separator: "\n") + "\n"
    }
    return found
  }

  @Test func theReadmeSnippetsCompileAndRunInANewPackage() async throws {
    let snippets = try Self.snippets()
    #expect(Set(snippets.keys) == ["library", "viewmodels"])
    let dir = try TemporaryDirectory()
    let package = dir.file("adopter")
    for (name, code) in snippets {
      try FileManager.default.createDirectory(
        atPath: package + "/Sources/\(name)", withIntermediateDirectories: true)
      try code.write(toFile: package + "/Sources/\(name)/main.swift", atomically: true, encoding: .utf8)
    }
    let manifest = """
      // swift-tools-version:6.0
      import PackageDescription

      let package = Package(
        name: "adopter",
        platforms: [.macOS(.v15), .iOS(.v18)],
        dependencies: [.package(path: "\(Self.root)")],
        targets: [
          .executableTarget(name: "library", dependencies: [.product(name: "SessionStorage", package: "main")]),
          .executableTarget(
            name: "viewmodels",
            dependencies: [
              .product(name: "SessionStorage", package: "main"),
              .product(name: "SessionViewModels", package: "main"),
            ]),
        ]
      )
      """
    try manifest.replacingOccurrences(of: "package: \"main\"", with: "package: \"\(Self.packageIdentity)\"")
      .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
    let build = try await ProcessRunner.runDetached(
      "/usr/bin/env", ["swift", "build", "--package-path", package], timeout: .seconds(1500))
    #expect(build.status == 0, "\(build.stdout)\n\(build.stderr)")
    guard build.status == 0 else { return }
    let home = dir.file("home")
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    let environment = ["HOME": home, "XDG_DATA_HOME": ""]
    let library = try await ProcessRunner.runDetached(
      package + "/.build/debug/library", [], environment: environment, timeout: .seconds(300))
    #expect(library.status == 0, "\(library.stderr)")
    let lines = library.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first?.hasPrefix("snapshot at 0: (none), logged out, updated ") == true, "\(lines)")
    #expect(lines.contains { $0.hasSuffix("MyApp       rename (none) → alice, login alice") }, "\(lines)")
    #expect(lines.contains { $0.hasPrefix("Alice, logged out, updated ") }, "\(lines)")
    #expect(lines.contains("refused: it hides a right-to-left override"), "\(lines)")
    #expect(lines.last?.hasPrefix(#"{"#) == true, "\(lines)")
    #expect(FileManager.default.fileExists(atPath: home + "/.local/share/sessionctl/session.db"))

    let models = try await ProcessRunner.runDetached(
      package + "/.build/debug/viewmodels", [], environment: environment, timeout: .seconds(300))
    #expect(models.status == 0, "\(models.stderr)")
    #expect(models.stdout == "Hello, alice\nsigned out\nHello, mark\nSigned out\n")
  }

  /// The identity SwiftPM gives a path dependency: its directory's name, lowercased.
  static var packageIdentity: String { URL(fileURLWithPath: root).lastPathComponent.lowercased() }
}

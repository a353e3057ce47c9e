import Foundation
import SystemKit
import ToolingKit

/// Runs a program under `strace` (`/usr/bin/strace`): to count its system calls, or to make
/// some of them fail (`-e inject=fdatasync:error=EIO:when=3+`), as a failing disk would.
public enum Strace {
  /// The `strace` binary.
  public static let executable = "/usr/bin/strace"

  /// Whether `strace` is installed.
  public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

  /// What a program run under `strace` did: its output, its status, and the system calls
  /// `strace` recorded (one per line, with the descriptors' paths: `-y`).
  public struct Run: Sendable, CustomStringConvertible {
    /// Standard output.
    public var stdout: String
    /// Standard error.
    public var stderr: String
    /// The exit status, or 128 + the signal when a signal ended it.
    public var status: Int32
    /// The lines of `strace`'s log (`-o`), threads and children included (`-f`).
    public var calls: [String]

    /// The recorded calls of `name` (such as `fdatasync`) on a descriptor whose path ends
    /// with `suffix` (such as `-wal`).
    public func calls(of names: Set<String>, onPathEndingWith suffix: String) -> [String] {
      calls.filter { line in
        names.contains { line.contains(" \($0)(") } && line.contains("\(suffix)>")
      }
    }

    /// The recorded calls that `strace` made fail (`(INJECTED)`).
    public var injected: [String] { calls.filter { $0.contains("(INJECTED)") } }

    /// Everything, for a failing expectation.
    public var description: String {
      "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)--- strace\n\(calls.joined(separator: "\n"))"
    }
  }

  /// Runs `executable` with `arguments` under `strace -f -qq -y` plus `options`, with
  /// ``ProcessRunner/environment(_:home:)`` plus `environment`, awaited off the cooperative
  /// pool (``ProcessRunner/run(_:_:environment:timeout:)``).
  public static func run(
    _ options: [String], _ executable: String, _ arguments: [String], environment: [String: String],
    timeout: Duration = .seconds(120)
  ) async throws -> Run {
    let scratch = try TemporaryDirectory()
    let log = scratch.file("strace")
    let result = try await ProcessRunner.run(
      Self.executable, ["-f", "-qq", "-y", "-o", log] + options + [executable] + arguments,
      environment: environment, timeout: timeout)
    let calls = String(decoding: fileBytes(log) ?? Data(), as: UTF8.self)
      .split(separator: "\n").map(String.init)
    return Run(stdout: result.stdout, stderr: result.stderr, status: result.status, calls: calls)
  }
}

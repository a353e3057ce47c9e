import Foundation
import SystemKit

/// The child side of ``BenchChild``: lines out on stdout, commands in on stdin.
enum ChildControl {
  /// Writes one line to stdout with a single `write(2)`, so lines from several threads
  /// never interleave and each reaches the parent at once.
  static func say(_ line: String) {
    do {
      try writeAll(STDOUT_FILENO, Array((line + "\n").utf8))
    } catch {
      _exit(0)
    }
  }

  /// Serves commands on stdin in a thread of its own: `cpu` answers `cpu NANOSECONDS` of
  /// process CPU time; the end of stdin ends the process.
  static func serveStdin() {
    let thread = Thread {
      var pending: [UInt8] = []
      var chunk = [UInt8](repeating: 0, count: 256)
      while true {
        let count = try? retryingOnInterrupt {
          chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        }
        guard let count, count > 0 else { _exit(0) }
        pending += chunk[0..<count]
        while let newline = pending.firstIndex(of: 0x0A) {
          let command = String(decoding: pending[..<newline], as: UTF8.self)
          pending.removeSubrange(...newline)
          if command == "cpu" { say("cpu \(Monotonic.processCPU())") }
        }
      }
    }
    thread.name = "stdin"
    thread.start()
  }
}

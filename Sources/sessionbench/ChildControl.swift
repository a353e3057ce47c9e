import Foundation

/// The child side of ``ChildProcess``: lines out on stdout, commands in on stdin.
enum ChildControl {
  /// Writes one line to stdout with a single `write(2)`, so lines from several threads
  /// never interleave and each reaches the parent at once.
  static func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { _exit(0) }
      offset += written
    }
  }

  /// Serves commands on stdin in a thread of its own: `cpu` answers `cpu NANOSECONDS` of
  /// process CPU time; the end of stdin ends the process.
  static func serveStdin() {
    let thread = Thread {
      var pending: [UInt8] = []
      var chunk = [UInt8](repeating: 0, count: 256)
      while true {
        let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { _exit(0) }
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

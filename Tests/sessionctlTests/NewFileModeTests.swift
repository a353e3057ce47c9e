import Foundation
import SystemKit
import TestSupport
import Testing

/// New store files — the database, its `-wal` and `-shm`, a backup — are 0600 whatever the
/// umask of the process that creates them, as the user who runs it (`nobody` when the
/// suite runs as root: root could write a 0400 file, so only the mode would show the bug).
@Suite(.timeLimit(.minutes(10))) struct NewFileModeTests {
  /// Under the umask, as the user: the first write creates the store, a second write and a
  /// backup follow, then `watch` holds the store open (its `-wal` and `-shm` exist while it
  /// runs) and the modes are read.
  @Test(arguments: ["0277", "0000", "0077", "0022"])
  func newFilesAre0600WhateverTheUmask(umask: String) async throws {
    let dir = try TemporaryDirectory()
    let place = dir.file("place")
    try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false)
    try Unprivileged.give(place)
    let db = place + "/s.db"
    let backup = place + "/backup.db"
    let script =
      #"umask "$1" && "$0" --db "$2" login alice && "$0" --db "$2" rename bob && "#
      + #""$0" --db "$2" backup "$3" >/dev/null && exec "$0" --db "$2" watch"#
    let (program, line) = Unprivileged.command(
      "/usr/bin/env",
      [
        "-i", "PATH=/usr/bin:/bin", "HOME=\(place)", "LC_ALL=C.UTF-8", "/bin/sh", "-c", script,
        try Unprivileged.product("sessionctl"), umask, db, backup,
      ])
    let stderr = dir.file("stderr")
    let files = [db, db + "-wal", db + "-shm", backup]
    let (lines, modes) = try await onThreadOfItsOwn { () throws -> ([String], [String: Int]) in
      let child = try ChildProcess(program, line, environment: [:], stdout: .pipe, stderr: .file(stderr))
      defer {
        child.kill(SIGTERM)
        _ = try? child.wait(timeout: .seconds(20))
      }
      var lines: [String] = []
      while let next = try child.readLine(timeout: .seconds(60)) {
        lines.append(next)
        if next.hasPrefix("snapshot at ") { break }
      }
      var modes: [String: Int] = [:]
      for file in files {
        var info = stat()
        if stat(file, &info) == 0 { modes[file] = Int(info.st_mode & 0o777) }
      }
      return (lines, modes)
    }
    let errors = String(decoding: FileManager.default.contents(atPath: stderr) ?? Data(), as: UTF8.self)
    #expect(lines.last?.hasPrefix("snapshot at 2: bob, logged in") == true, "\(lines) \(errors)")
    #expect(errors.isEmpty, "\(errors)")
    for file in files {
      #expect(
        modes[file] == 0o600,
        "umask \(umask): \(file) is \(modes[file].map { "0" + String($0, radix: 8) } ?? "missing")")
    }
  }
}

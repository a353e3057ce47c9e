import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Shuts down, both ways, the TCP sockets of this process whose local port is `localPort`
/// (`shutdown(2)`, not `close`: the descriptor stays its owner's). For the owner the
/// connection is lost, as when the network between client and server fails, while the
/// server's process lives on with what it was doing. The sockets are found by inode in
/// `/proc/net/tcp` and `/proc/self/fd` (Linux).
/// - Returns: how many sockets were shut down.
public func shutDownTCPConnections(localPort: Int) -> Int {
  var inodes: Set<Substring> = []
  for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
    // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file.
    guard let file = FileHandle(forReadingAtPath: table) else { continue }
    let text = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
    try? file.close()
    // "sl local_address rem_address st … uid timeout inode …", the port in hex after ':'.
    for line in text.split(separator: "\n").dropFirst() {
      let fields = line.split(separator: " ")
      guard fields.count > 9, let colon = fields[1].lastIndex(of: ":"),
        Int(fields[1][fields[1].index(after: colon)...], radix: 16) == localPort
      else { continue }
      inodes.insert(fields[9])
    }
  }
  guard !inodes.isEmpty else { return 0 }
  let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var count = 0
  for name in descriptors {
    guard let fd = Int32(name),
      let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
      target.hasPrefix("socket:["), target.hasSuffix("]"),
      inodes.contains(target.dropFirst("socket:[".count).dropLast())
    else { continue }
    if shutdown(fd, Int32(SHUT_RDWR)) == 0 { count += 1 }
  }
  return count
}

import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A store's TCP connections give up on a silent peer in seconds, not after the operating
/// system's two hours: keepalive probes after 10 s of silence, every 5 s, 3 of them, and a
/// 30 s limit on unacknowledged data; a URL's own settings win.
@Suite(.timeLimit(.minutes(10))) struct SilentConnectionTests {
  @Test func aStoresConnectionsProbeASilentPeerAndAURLsSettingsWin() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let origin = uniqueName("silence")
    let store = try SessionStore(postgresURL: url, options: .init(origin: origin))
    let tuned = try SessionStore(
      postgresURL: url + "&keepalives_idle=42", options: .init(origin: origin + "_url"))
    for (name, idle) in [("\(origin)/writer", 10), ("\(origin)/reader", 10), ("\(origin)_url/writer", 42)] {
      let port = try #require(
        Int(
          try await cluster.query(
            "SELECT client_port FROM pg_stat_activity WHERE application_name = '\(name)'"
          ).trimmingCharacters(in: .whitespacesAndNewlines)))
      let options = try #require(tcpOptions(localPort: port), "no socket of this process on port \(port)")
      #expect(options.keepalive == 1, "\(name)")
      #expect(options.idle == idle, "\(name)")
      #expect(options.interval == 5 && options.count == 3, "\(name)")
      #expect(options.userTimeout == 30_000, "\(name)")
    }
    withExtendedLifetime((store, tuned)) {}
  }
}

/// The keepalive settings and `TCP_USER_TIMEOUT` of this process's TCP socket whose local
/// port is `localPort` (found by inode in `/proc/self/net/tcp` and `/proc/self/fd`).
private func tcpOptions(localPort: Int) -> (
  keepalive: Int32, idle: Int32, interval: Int32, count: Int32, userTimeout: Int32
)? {
  guard let file = FileHandle(forReadingAtPath: "/proc/self/net/tcp") else { return nil }
  let text = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
  try? file.close()
  var inodes: Set<Substring> = []
  for line in text.split(separator: "\n").dropFirst() {
    let fields = line.split(separator: " ")
    guard fields.count > 9, let colon = fields[1].lastIndex(of: ":"),
      Int(fields[1][fields[1].index(after: colon)...], radix: 16) == localPort
    else { continue }
    inodes.insert(fields[9])
  }
  for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
    guard let fd = Int32(name),
      let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
      target.hasPrefix("socket:["), inodes.contains(target.dropFirst("socket:[".count).dropLast())
    else { continue }
    func option(_ level: Int32, _ name: Int32) -> Int32 {
      var value: Int32 = -1
      var length = socklen_t(MemoryLayout<Int32>.size)
      return getsockopt(fd, level, name, &value, &length) == 0 ? value : -1
    }
    let tcp = Int32(IPPROTO_TCP)
    return (
      option(SOL_SOCKET, SO_KEEPALIVE), option(tcp, TCP_KEEPIDLE), option(tcp, TCP_KEEPINTVL),
      option(tcp, TCP_KEEPCNT), option(tcp, 18 /* TCP_USER_TIMEOUT */)
    )
  }
  return nil
}

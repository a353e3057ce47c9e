import Foundation
import TestSupport
import Testing
import ToolingKit

/// The PostgreSQL server the tests use: `PostgresCluster` over `scripts/postgres-cluster`, with
/// the shared server, private clusters and psql of TestSupport.
@Suite(.timeLimit(.minutes(10))) struct PostgresClusterTests {
  @Test func sharedServerAnswersOverTCPAndTheSocket() async throws {
    let cluster = try await PostgresCluster.shared()
    #expect(try await cluster.psql("SELECT 1") == "1\n")
    #expect(try await cluster.psql("SELECT 1", socket: true) == "1\n")
    // Over TCP the server has an address; over a Unix socket it has none.
    #expect(try await cluster.psql("SELECT inet_server_addr() IS NOT NULL") == "t\n")
    if cluster.socketURL != cluster.url {
      #expect(try await cluster.psql("SELECT inet_server_addr() IS NULL", socket: true) == "t\n")
    }
    // Tests open many connections at once.
    #expect(try await Int(cluster.psql("SHOW max_connections").trimmingCharacters(in: .newlines)) ?? 0 >= 200)
  }

  @Test func psqlRunsInTheGivenSchemaAndReportsErrors() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let schema = String(try #require(url.split(separator: "schema=").last))
    try await cluster.psql("CREATE SCHEMA \(schema)")
    try await withCleanup {
      let output = try await cluster.psql(
        "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2); SELECT current_schema(), sum(x) FROM t;",
        schema: schema)
      #expect(output == "\(schema)|3\n")
      #expect(try await cluster.psql("SELECT count(*) FROM \(schema).t") == "2\n")
      let error = await #expect(throws: (any Error).self) {
        try await cluster.psql("SELECT * FROM no_such_table")
      }
      #expect(String(describing: error).contains("no_such_table"))
    } cleanup: {
      _ = try? await cluster.psql("DROP SCHEMA \(schema) CASCADE")
    }
  }

  @Test func aPrivateClusterRestartsOnTheSamePort() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      let shared = try await PostgresCluster.shared()
      #expect(cluster.url != shared.url)
      let port = try await cluster.psql("SELECT inet_server_port()")
      let started = try await cluster.psql("SELECT pg_postmaster_start_time()")
      try await cluster.restart()
      #expect(try await cluster.psql("SELECT inet_server_port()") == port)
      #expect(try await cluster.psql("SELECT pg_postmaster_start_time()") != started)
      #expect(try await cluster.psql("SELECT 1", socket: true) == "1\n")
    }
  }

  @Test func aStoppedClusterIsGone() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      #expect(try await cluster.psql("SELECT 1") == "1\n")
      await cluster.stop()
      let error = await #expect(throws: (any Error).self) { try await cluster.psql("SELECT 1") }
      #expect(String(describing: error).contains("connection"))
      let directory = try #require(
        cluster.socketURL.split(separator: "host=").last?.split(separator: "&").first)
      #expect(!FileManager.default.fileExists(atPath: String(directory)))
    }
  }

  /// `eval "$(scripts/postgres-cluster start DIR)"`, as the README shows it, gives the
  /// server's URLs to the programs the shell runs next (`swift test`, `psql`): the script
  /// prints `export` lines, not bare assignments a child never sees.
  @Test func evalOfTheStartOutputExportsTheURLs() async throws {
    _ = try await PostgresCluster.shared()  // skipped (or failed in CI) without PostgreSQL
    var template = Array("/tmp/eval-pg-XXXXXX".utf8CString)
    let directory = String(cString: try #require(mkdtemp(&template)))
    let shell = #"""
      eval "$("$0" start "$1" --owner $$)" || exit 1
      printenv SESSIONSTORAGE_TEST_POSTGRES_URL SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL         SESSIONSTORAGE_TEST_POSTGRES_DIR
      "$0" stop "$1"
      """#
    let result = try await ProcessRunner.run(
      "/bin/bash", ["-c", shell, PostgresCluster.script, directory], timeout: .seconds(180))
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == 3, "\(result.stdout)")
    #expect(lines.first?.hasPrefix("postgresql://postgres@127.0.0.1:") == true, "\(lines)")
    #expect(
      lines.dropFirst().first?.hasPrefix("postgresql://postgres@/postgres?host=\(directory)&port=") == true)
    #expect(lines.last == directory)
    #expect(!FileManager.default.fileExists(atPath: directory), "stopped and removed")
  }

  /// On a loaded machine a connection can take longer than a store's default 5 s
  /// `connect_timeout`; a test's child must still connect. The URLs tests hand out carry
  /// ``PostgresCluster/connectTimeoutSeconds`` (a URL's own wins): here the postmaster is
  /// stopped (SIGSTOP) for 7 s while `sessionctl status` connects, and it answers once the
  /// server goes on. (With the server's bare URL, the child exits 69: "timeout expired".)
  @Test func aTestsStoreURLWaitsForAServerSlowerThanTheStoresDefaultTimeout() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      let url = cluster.freshStoreURL()
      let sessionctl = ProcessRunner.product("sessionctl")
      #expect(try await ProcessRunner.run(sessionctl, ["--db", url, "login", "alice"]).status == 0)
      let directory = try #require(cluster.directory)
      let postmaster = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
      let pid = try #require(postmaster.split(separator: "\n").first.flatMap { pid_t($0) })
      try #require(kill(pid, SIGSTOP) == 0)
      let status = Task { try await ProcessRunner.run(sessionctl, ["--db", url, "status"]) }
      try await withCleanup {
        try await Task.sleep(for: .seconds(7))
      } cleanup: {
        kill(pid, SIGCONT)
      }
      let result = try await status.value
      #expect(result.status == 0, "\(result.stderr)")
      #expect(result.stdout.contains("alice"), "\(result.stdout)")
    }
  }

  @Test func freshStoreURLsNameDistinctSchemas() async throws {
    let cluster = try await PostgresCluster.shared()
    let urls = (0..<200).map { _ in cluster.freshStoreURL() }
    #expect(Set(urls).count == urls.count)
    for url in urls {
      #expect(url.hasPrefix(cluster.url))
      #expect(url.wholeMatch(of: /.*[?&]schema=t_[a-z]+/) != nil, "\(url)")
    }
    let socket = cluster.freshStoreURL(socket: true)
    #expect(socket.hasPrefix(cluster.socketURL))
    #expect(socket.wholeMatch(of: /.*[?&]schema=t_[a-z]+/) != nil, "\(socket)")
  }
}

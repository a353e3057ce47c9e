import SessionStorage
import SessionStoragePostgres
import Testing

/// Loading libpq: the library's functions, or a `libraryMissing` error that names the
/// library, the loader's reason and what to install.
@Suite struct LibPQTests {
  @Test func theSystemsLibpqLoadsWithEveryFunction() throws {
    let libpq = try LibPQ.load()
    #expect(libpq.PQstatus(nil).rawValue == 1)  // CONNECTION_BAD, for no connection
  }

  @Test func aLibraryThatIsNotThereIsLibraryMissingWithTheLoadersReason() {
    let error = #expect(throws: SessionStorageError.self) {
      try LibPQ(["libpq-not-installed.so.5", "/nonexistent/libpq.so.5"])
    }
    #expect(error?.code == .libraryMissing)
    let message = error?.message ?? ""
    #expect(
      message.hasPrefix("cannot open a PostgreSQL store: libpq cannot be loaded (libpq-not-installed.so.5: "))
    #expect(message.contains("; /nonexistent/libpq.so.5: "), "\(message)")
    #expect(message.contains("apt-get install libpq5"), "\(message)")
  }

  @Test func aLibraryWithoutLibpqsFunctionsIsLibraryMissingNamingTheFirstMissingOne() {
    let error = #expect(throws: SessionStorageError.self) { try LibPQ(["libsqlite3.so.0"]) }
    #expect(error?.code == .libraryMissing)
    #expect(
      error?.message.contains("the libpq loaded has no PQbackendPID") == true, "\(String(describing: error))")
  }
}

// swift-format-ignore-file: AlwaysUseLowerCamelCase
// (The members are libpq's functions, under libpq's names.)

import CLibPQ
import SessionStorage

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// libpq's functions, from the library loaded when the first PostgreSQL store (or raw
/// connection) is opened: nothing links libpq, so a program that opens no PostgreSQL store
/// never maps it nor the libraries it needs (TLS, Kerberos, LDAP, …), and starts faster.
///
/// A table exists only once the library is loaded and every function resolved, so a call
/// through it cannot find a function missing. The library stays loaded for the process's
/// life; the table is immutable.
package struct LibPQ: Sendable {
  package let PQbackendPID: clibpq_PQbackendPID
  package let PQclear: clibpq_PQclear
  package let PQcmdTuples: clibpq_PQcmdTuples
  package let PQconnectStartParams: clibpq_PQconnectStartParams
  package let PQconnectdbParams: clibpq_PQconnectdbParams
  package let PQconninfoFree: clibpq_PQconninfoFree
  package let PQconninfoParse: clibpq_PQconninfoParse
  package let PQconsumeInput: clibpq_PQconsumeInput
  package let PQenterPipelineMode: clibpq_PQenterPipelineMode
  package let PQerrorMessage: clibpq_PQerrorMessage
  package let PQexec: clibpq_PQexec
  package let PQexecParams: clibpq_PQexecParams
  package let PQexecPrepared: clibpq_PQexecPrepared
  package let PQexitPipelineMode: clibpq_PQexitPipelineMode
  package let PQfinish: clibpq_PQfinish
  package let PQfreemem: clibpq_PQfreemem
  package let PQgetResult: clibpq_PQgetResult
  package let PQgetisnull: clibpq_PQgetisnull
  package let PQgetvalue: clibpq_PQgetvalue
  package let PQnfields: clibpq_PQnfields
  package let PQnotifies: clibpq_PQnotifies
  package let PQntuples: clibpq_PQntuples
  package let PQpipelineSync: clibpq_PQpipelineSync
  package let PQprepare: clibpq_PQprepare
  package let PQreset: clibpq_PQreset
  package let PQresultErrorField: clibpq_PQresultErrorField
  package let PQresultStatus: clibpq_PQresultStatus
  package let PQsendQueryParams: clibpq_PQsendQueryParams
  package let PQsendQueryPrepared: clibpq_PQsendQueryPrepared
  package let PQsetErrorVerbosity: clibpq_PQsetErrorVerbosity
  package let PQsetNoticeProcessor: clibpq_PQsetNoticeProcessor
  package let PQsocket: clibpq_PQsocket
  package let PQstatus: clibpq_PQstatus
  package let PQtransactionStatus: clibpq_PQtransactionStatus

  /// The file names tried, in order, by the dynamic loader's usual search (`LD_LIBRARY_PATH`,
  /// the system's directories; on Apple platforms also Homebrew's, where libpq is keg-only).
  #if canImport(Darwin)
    package static let fileNames = [
      "libpq.5.dylib", "/opt/homebrew/opt/libpq/lib/libpq.5.dylib", "/usr/local/opt/libpq/lib/libpq.5.dylib",
    ]
  #else
    package static let fileNames = ["libpq.so.5"]
  #endif

  /// What to install when libpq is missing.
  private static let advice =
    "install PostgreSQL's client library: the package libpq5 on Debian and Ubuntu "
    + "(apt-get install libpq5), libpq with Homebrew (brew install libpq)"

  /// libpq, loaded on the first call (once per process, whichever thread asks first).
  /// - Throws: `libraryMissing`, naming the library, the loader's reason and what to install,
  ///   when it cannot be loaded or lacks a function (a libpq older than 14); every later call
  ///   throws the same.
  package static func load() throws(SessionStorageError) -> LibPQ { try loaded.get() }

  private static let loaded = Result { () throws(SessionStorageError) in try LibPQ(fileNames) }

  /// Loads the first of `fileNames` that loads and resolves every function in it.
  package init(_ fileNames: [String]) throws(SessionStorageError) {
    var reasons: [String] = []
    var handle: UnsafeMutableRawPointer?
    for name in fileNames where handle == nil {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
      if handle == nil { reasons.append(dlerror().map { String(cString: $0) } ?? "\(name) cannot be loaded") }
    }
    guard let handle else {
      throw SessionStorageError(
        .libraryMissing,
        "cannot open a PostgreSQL store: libpq cannot be loaded (\(reasons.joined(separator: "; "))); "
          + Self.advice)
    }
    func resolve<Function>(_ name: String) throws(SessionStorageError) -> Function {
      guard let address = dlsym(handle, name) else {
        throw SessionStorageError(
          .libraryMissing,
          "cannot open a PostgreSQL store: the libpq loaded has no \(name) (libpq 14 or later is "
            + "needed); " + Self.advice)
      }
      return unsafeBitCast(address, to: Function.self)
    }
    PQbackendPID = try resolve("PQbackendPID")
    PQclear = try resolve("PQclear")
    PQcmdTuples = try resolve("PQcmdTuples")
    PQconnectStartParams = try resolve("PQconnectStartParams")
    PQconnectdbParams = try resolve("PQconnectdbParams")
    PQconninfoFree = try resolve("PQconninfoFree")
    PQconninfoParse = try resolve("PQconninfoParse")
    PQconsumeInput = try resolve("PQconsumeInput")
    PQenterPipelineMode = try resolve("PQenterPipelineMode")
    PQerrorMessage = try resolve("PQerrorMessage")
    PQexec = try resolve("PQexec")
    PQexecParams = try resolve("PQexecParams")
    PQexecPrepared = try resolve("PQexecPrepared")
    PQexitPipelineMode = try resolve("PQexitPipelineMode")
    PQfinish = try resolve("PQfinish")
    PQfreemem = try resolve("PQfreemem")
    PQgetResult = try resolve("PQgetResult")
    PQgetisnull = try resolve("PQgetisnull")
    PQgetvalue = try resolve("PQgetvalue")
    PQnfields = try resolve("PQnfields")
    PQnotifies = try resolve("PQnotifies")
    PQntuples = try resolve("PQntuples")
    PQpipelineSync = try resolve("PQpipelineSync")
    PQprepare = try resolve("PQprepare")
    PQreset = try resolve("PQreset")
    PQresultErrorField = try resolve("PQresultErrorField")
    PQresultStatus = try resolve("PQresultStatus")
    PQsendQueryParams = try resolve("PQsendQueryParams")
    PQsendQueryPrepared = try resolve("PQsendQueryPrepared")
    PQsetErrorVerbosity = try resolve("PQsetErrorVerbosity")
    PQsetNoticeProcessor = try resolve("PQsetNoticeProcessor")
    PQsocket = try resolve("PQsocket")
    PQstatus = try resolve("PQstatus")
    PQtransactionStatus = try resolve("PQtransactionStatus")
  }
}

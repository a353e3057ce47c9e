#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

// libpq's client API, for its types only: nothing links libpq. SessionStoragePostgres loads
// the library when a store is opened (LibPQ.swift) and calls it through pointers of the types
// below, so that a program that opens no PostgreSQL store never maps libpq and the ~25
// libraries it needs. Debian installs the header under postgresql/, Homebrew beside the others.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

// The type of a pointer to each libpq function the package calls, taken from the header's
// own declaration (`__typeof__` does not reference the symbol): Swift imports
// `clibpq_PQexec` as the `@convention(c)` type of `PQexec`.
#define CLIBPQ_FUNCTION(name) typedef __typeof__(name) *clibpq_##name;
CLIBPQ_FUNCTION(PQbackendPID)
CLIBPQ_FUNCTION(PQclear)
CLIBPQ_FUNCTION(PQcmdTuples)
CLIBPQ_FUNCTION(PQconnectStartParams)
CLIBPQ_FUNCTION(PQconnectdbParams)
CLIBPQ_FUNCTION(PQconninfoFree)
CLIBPQ_FUNCTION(PQconninfoParse)
CLIBPQ_FUNCTION(PQconsumeInput)
CLIBPQ_FUNCTION(PQenterPipelineMode)
CLIBPQ_FUNCTION(PQerrorMessage)
CLIBPQ_FUNCTION(PQexec)
CLIBPQ_FUNCTION(PQexecParams)
CLIBPQ_FUNCTION(PQexecPrepared)
CLIBPQ_FUNCTION(PQexitPipelineMode)
CLIBPQ_FUNCTION(PQfinish)
CLIBPQ_FUNCTION(PQfreemem)
CLIBPQ_FUNCTION(PQgetResult)
CLIBPQ_FUNCTION(PQgetisnull)
CLIBPQ_FUNCTION(PQgetvalue)
CLIBPQ_FUNCTION(PQnfields)
CLIBPQ_FUNCTION(PQnotifies)
CLIBPQ_FUNCTION(PQntuples)
CLIBPQ_FUNCTION(PQpipelineSync)
CLIBPQ_FUNCTION(PQprepare)
CLIBPQ_FUNCTION(PQreset)
CLIBPQ_FUNCTION(PQresultErrorField)
CLIBPQ_FUNCTION(PQresultStatus)
CLIBPQ_FUNCTION(PQsendQueryParams)
CLIBPQ_FUNCTION(PQsendQueryPrepared)
CLIBPQ_FUNCTION(PQsetErrorVerbosity)
CLIBPQ_FUNCTION(PQsetNoticeProcessor)
CLIBPQ_FUNCTION(PQsocket)
CLIBPQ_FUNCTION(PQstatus)
CLIBPQ_FUNCTION(PQtransactionStatus)
#undef CLIBPQ_FUNCTION

#endif

#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) {
  return SQLITE_TRANSIENT;
}

/// sqlite3_db_config is variadic, which Swift cannot call: this sets
/// SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (1 = do not checkpoint and delete the WAL when the last
/// connection closes). Returns SQLite's result code.
static inline int csqlite_set_no_checkpoint_on_close(sqlite3 *db, int enabled) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled, (int *)0);
}

/// Sets SQLITE_DBCONFIG_ENABLE_TRIGGER (0 = triggers do not fire on this connection).
/// Returns SQLite's result code.
static inline int csqlite_set_triggers_enabled(sqlite3 *db, int enabled) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled, (int *)0);
}

#endif

#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

// libpq's client API; Swift calls it directly, so the shim holds nothing else.
#include <libpq-fe.h>

#endif

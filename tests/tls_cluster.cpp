// Every test binary that links the runtime runs over TLS, as a cluster does: one temporary
// cluster CA per test process (runtime/tls/temporary_cluster.h), installed before main(),
// so in-process actor systems, the transport and the allreduce ring use it, and every
// `partita` child (daemons, CLI commands) finds it through PARTITA_TLS_DIR.
#include "runtime/tls/temporary_cluster.h"

namespace {

const partita::runtime::tls::TemporaryCluster test_cluster;

}  // namespace

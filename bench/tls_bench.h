// `partita bench tls`: what mutual TLS (runtime/tls/) costs the bulk transport and the
// allreduce ring: the same transfers over TLS 1.3 (AES-128-GCM) and over plaintext, in one
// run, rounds interleaved. (The epoch time with and without TLS: `partita bench train
// --compare-tls ROUNDS`.)
#pragma once

#include <cstdint>

namespace partita::bench {

struct TlsBenchOptions {
  int64_t transfer_mb = 512;  // per round, over one transport connection
  int64_t floats = int64_t{16} << 20;  // per allreduce operation
  int members = 2;                     // ring members (threads of this process, loopback)
  int operations = 10;                 // allreduce operations per round
  int rounds = 5;                      // per mode, alternating plaintext and TLS
};

// Per round and mode: (a) `transfer_mb` MiB streamed from one thread to another over a
// transport Connection (Listener / Connection::connect on 127.0.0.1, 1 MiB sends), in
// GB/s; (b) `operations` ring allreduces of `floats` float32 among `members` Ring members
// on threads of this process, in ms per operation. The process's credentials are swapped
// between rounds (none: plaintext). Prints each round and the medians, with TLS / plain.
void run_tls_bench(const TlsBenchOptions& options);

}  // namespace partita::bench

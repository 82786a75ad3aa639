// The baseline of the benchmarks that move bytes between processes: the kernel's TCP alone,
// one loopback connection between two threads, no framing, no TLS, no copy beyond the
// socket's. `bench transfer` and `bench staging` print their rates next to it.
#pragma once

#include <cstdint>

namespace partita::bench {

// Seconds to move `total` bytes over a fresh loopback TCP connection from one thread to
// another, written in pieces of at most `piece` bytes from one buffer and each read whole
// into another; `warmup` pieces go first, untimed. Every blocking call gives up after 120 s.
// Throws Error if the connection cannot be made or breaks.
double raw_tcp_seconds(uint64_t total, uint64_t piece, int warmup);

}  // namespace partita::bench

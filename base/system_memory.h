// The machine's memory as the kernel reports it (/proc/meminfo): what a node tells its
// head, and what decides whether features or a cache fit in memory.
#pragma once

#include <cstdint>

namespace partita {

// Physical memory (MemTotal); 0 when it cannot be read.
uint64_t total_memory_bytes();
// Memory that could be had without swapping (MemAvailable); 0 when it cannot be read.
uint64_t available_memory_bytes();

}  // namespace partita

// Arrays copied out of their files into anonymous memory backed by transparent huge pages:
// where features that fit in memory live, so that random row reads run at the speed of the
// memory rather than of 4 KB page walks.
//
// A file mapping is read through 4 KB pages: a random 512-byte row is a TLB miss on top of
// its cache misses, and the page walk itself misses. Anonymous memory with
// madvise(MADV_HUGEPAGE) is backed by 2 MB pages (transparent huge pages are
// `madvise`-only on the project's machines, /sys/kernel/mm/transparent_hugepage/enabled),
// whose translations the TLB holds for a whole feature matrix. Measured in `partita bench
// gather` (BENCHMARKS.md, "Neighbour sampling"): on the project's machine the gain of huge
// pages over the mapping is 0-15% (its page walks are cheap); on another machine of the class
// they took a gather from 4.2 to 9.5 GB/s.
//
// Loading copies the file in 64 MB chunks and drops each copied chunk from this process's
// mapping, then releases the mapping and drops the file from the page cache (where no other
// process maps it): the process never holds the file twice, and the page cache's copy (made
// as the file is read, kept by the kernel until then) goes when the load ends. Measured on
// a 512 MB array: a peak resident set of 593 MB (the copy and one chunk), and no page of the
// file cached afterwards.
#pragma once

#include <cstdint>

#include "base/array_file.h"
#include "base/array_ref.h"

namespace partita {

// The elements of `array` in anonymous memory (2 MB aligned, madvise(MADV_HUGEPAGE); plain
// pages for arrays under 2 MB, which a huge page would only inflate); the mapping is
// released. Throws Error naming the file when the memory cannot be had.
ArrayRef load_resident(MappedArray array);

// A copy of `array`'s elements in anonymous memory, laid out as load_resident lays out a
// file's (2 MB aligned, madvise(MADV_HUGEPAGE), plain pages under 2 MB), read-only: for
// arrays built in memory (a vector's pages are 4 KB ones where transparent huge pages are
// `madvise`-only) that are read at random, such as a topology's columns. An empty array,
// or one of no elements, is returned as it is. Throws Error naming the array when the
// memory cannot be had.
ArrayRef copy_resident(const ArrayRef& array);

// Whether the address lies in anonymous memory (no file behind it), from /proc/self/maps:
// for tests and logs.
bool is_anonymous_memory(const void* address);

}  // namespace partita

#include "models/torch_runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>

namespace partita {

namespace {

// OpenBLAS's own entry points, looked up at run time: the BLAS behind libtorch is chosen by
// the alternatives system, so it may not be OpenBLAS.
template <typename Function>
Function* openblas_function(const char* name) {
  return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void set_torch_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(1);
  if (auto* set_blas_threads = openblas_function<void(int)>("openblas_set_num_threads")) {
    set_blas_threads(threads);
  }
}

int torch_threads() { return at::get_num_threads(); }

int blas_threads() {
  auto* get_blas_threads = openblas_function<int()>("openblas_get_num_threads");
  return get_blas_threads != nullptr ? get_blas_threads() : 0;
}

namespace {

// libtorch's CPU tensors from plain malloc chunks, aligned inside them. libtorch's own CPU
// allocator takes each from posix_memalign(64), and glibc before 2.38 does not reuse a freed
// aligned chunk for the next aligned request (it carves a new one: sourceware bug 14581).
// With the heap kept (below), a training process's heap grew by every step's tensors.
class MallocCpuAllocator final : public c10::Allocator {
 public:
  static constexpr uintptr_t kAlignment = 64;  // libtorch's own (vectorised kernels)

  // The data is aligned inside a malloc chunk of kAlignment more bytes; the chunk's address
  // sits in the 8 bytes before the data (malloc aligns to 16, so there are at least 16).
  c10::DataPtr allocate(size_t bytes) const override {
    void* base = std::malloc(bytes + kAlignment);
    TORCH_CHECK(base != nullptr, "cannot allocate a tensor of ", bytes, " bytes: out of memory");
    void* data = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + kAlignment) & ~(kAlignment - 1));
    static_cast<void**>(data)[-1] = base;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  static void release(void* data) {
    if (data != nullptr) std::free(static_cast<void**>(data)[-1]);
  }
};

}  // namespace

void tune_malloc_for_training() {
  static MallocCpuAllocator allocator;
  // Above libtorch's own priority (0), so that later registrations of the default keep ours.
  c10::SetCPUAllocator(&allocator, /*priority=*/1);
  // Worker threads allocate from arenas of 64 MB heaps, which cannot hold larger chunks:
  // those stay mmapped whatever the threshold, but the common tensors of a batch fit.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void release_heap_between_epochs(uint64_t epoch) {
  static std::atomic<uint64_t> trimmed_for{0};
  if (trimmed_for.exchange(epoch) == epoch) return;
  ::malloc_trim(0);
}

namespace {

int collect_blas(struct dl_phdr_info* info, size_t, void* out) {
  std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  auto* found = static_cast<std::string*>(out);
  if (name.find("openblas") != std::string::npos) {
    *found = "openblas";
  } else if (name.find("libmkl") != std::string::npos && found->empty()) {
    *found = "mkl";
  } else if (name.find("libblis") != std::string::npos && found->empty()) {
    *found = "blis";
  } else if (name.find("libblas.so") != std::string::npos && found->empty()) {
    // Debian's reference BLAS lives under .../blas/libblas.so.3; the alternatives symlink
    // resolves there when no optimised BLAS is installed.
    char resolved[4096];
    if (realpath(name.c_str(), resolved) != nullptr) {
      std::string real = resolved;
      *found = real.find("openblas") != std::string::npos ? "openblas"
               : real.find("/blas/") != std::string::npos ? "reference"
                                                           : real;
    }
  }
  return 0;
}

}  // namespace

std::string loaded_blas() {
  // A small matmul makes sure libtorch has bound its BLAS symbols.
  auto a = at::ones({8, 8});
  (void)at::mm(a, a);
  std::string found;
  dl_iterate_phdr(collect_blas, &found);
  return found.empty() ? "unknown" : found;
}

void warn_if_slow_blas() {
  std::string blas = loaded_blas();
  if (blas == "reference" || blas == "unknown") {
    spdlog::warn(
        "libtorch is using the {} BLAS: dense layers will be 15-25x slower. Install "
        "libopenblas0-pthread (apt-get install libopenblas0-pthread).",
        blas);
  } else {
    spdlog::debug("BLAS: {}", blas);
  }
}

}  // namespace partita

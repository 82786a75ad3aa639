// The libtorch process settings every torch-using binary relies on.
#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "models/torch_runtime.h"

namespace partita {
namespace {

TEST(TorchRuntimeTest, MatrixProductsRunOnOpenBlas) {
  // The reference BLAS makes dense layers 15-25x slower; the set-up installs OpenBLAS and
  // the alternatives system must route libtorch's libblas.so.3 to it.
  EXPECT_EQ(loaded_blas(), "openblas");
}

TEST(TorchRuntimeTest, ThreadCountGoesToTheMatrixProducts) {
  set_torch_threads(2);
  EXPECT_EQ(blas_threads(), 2);
  EXPECT_EQ(torch_threads(), 1);  // libtorch's own pool would fight OpenBLAS's for the cores
  set_torch_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_EQ(torch_threads(), 1);
  set_torch_threads(0);  // all cores
  EXPECT_GE(blas_threads(), 1);
  EXPECT_EQ(torch_threads(), 1);
}

// Training processes take CPU tensors from plain malloc (libtorch's own allocator's aligned
// chunks were never reused by glibc 2.36: a job's heap grew by every step's tensors), still
// aligned as libtorch's vectorised kernels expect, and a freed tensor's memory serves the
// next one of its size.
TEST(TorchRuntimeTest, TrainingTakesTensorsFromMemoryTheHeapReuses) {
  tune_malloc_for_training();
  tune_malloc_for_training();  // idempotent
  EXPECT_NE(c10::GetCPUAllocator(), c10::GetDefaultCPUAllocator());
  for (int64_t n : {1, 17, 1000, 250000}) {
    at::Tensor t = at::empty({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << n;
    t.fill_(2);
    EXPECT_EQ(t.sum().item<float>(), 2.0f * static_cast<float>(n));
  }
  const void* first = nullptr;
  for (int i = 0; i < 3; ++i) {
    at::Tensor t = at::empty({250000});
    if (i == 0) first = t.data_ptr();
    EXPECT_EQ(t.data_ptr(), first) << "round " << i;
  }
}

}  // namespace
}  // namespace partita

// The libtorch process settings every torch-using binary relies on.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace partita

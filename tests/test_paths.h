// Where the tests find what lies outside their own binary: the `partita` binary they run
// (CLI commands, daemons as child processes), the collection of broken inputs
// (tests/corpus), the source tree (examples/) and the real datasets.
//
// The values are the build tree's: CMake writes them into one generated unit,
// test_paths.cpp in the build folder's tests/ (tests/CMakeLists.txt), which the test
// binaries link, so a test binary run by hand, outside ctest, finds the same paths as under
// ctest. They are constants of that one unit rather than compile definitions on every test
// unit: a definition holding the clone's absolute path is part of each unit's compiler
// arguments, which ccache's base_dir does not rewrite (it rewrites path arguments, not
// macro values), so every unit of the five test binaries that had one (72 in an ordinary
// tree, 34 in a sanitizer tree) compiled again in each fresh clone, as CI's is. Now only
// this one small unit does.
#pragma once

namespace partita::testing {

// The `partita` binary the tests run: this build tree's tools/partita, or PARTITA_TEST_CLI
// when the tree was configured with it (scripts/sanitize.sh: a sanitizer tree's tests run
// an ordinary build's CLI).
extern const char* const kPartitaBinary;
// tests/corpus of the source tree: the broken inputs the readers are tested on.
extern const char* const kTestCorpus;
// The source tree's root (examples/ holds the example jobs some tests load).
extern const char* const kSourceDir;
// The CMake option PARTITA_DATA_DIR: the folder of cora/ and fb15k-237/ (may not exist;
// dataset_path() in test_util.h says so when a test needs it).
extern const char* const kDataDir;

}  // namespace partita::testing

// The row copy kernel (graph/row_copy.h), through the placement every batch uses: rows land
// exactly where they belong whatever their width and the buffer's alignment, on the plain
// and the streaming paths, whole or in pieces, and nothing else is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "graph/batch_assembly.h"

namespace partita {
namespace {

// Places `rows` rows of `row_bytes` at shuffled positions in a buffer offset by `offset`
// bytes from a 64-byte boundary, in pieces of `piece` rows, and checks every byte.
void expect_placed(size_t row_bytes, size_t rows, size_t offset, size_t piece) {
  SCOPED_TRACE("rows of " + std::to_string(row_bytes) + " bytes, offset " + std::to_string(offset));
  std::vector<int64_t> positions(rows * 2);
  std::iota(positions.begin(), positions.end(), 0);
  std::mt19937_64 rng(row_bytes + offset);
  std::shuffle(positions.begin(), positions.end(), rng);
  positions.resize(rows);  // half of the batch's rows come from this part
  std::vector<char> source(rows * row_bytes);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 31 + i / row_bytes);
  std::vector<char> storage(2 * rows * row_bytes + 128, 'z');
  char* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 + offset;
  RowsTarget target;
  target.base = base;
  target.row_bytes = row_bytes;
  target.positions = Span<const int64_t>(positions);
  for (size_t first = 0; first < rows; first += piece) {
    place_rows(target, source.data() + first * row_bytes, first, std::min(piece, rows - first));
  }
  std::vector<bool> taken(rows * 2, false);
  for (size_t k = 0; k < rows; ++k) {
    taken[positions[k]] = true;
    ASSERT_EQ(std::memcmp(base + positions[k] * row_bytes, source.data() + k * row_bytes, row_bytes), 0) << "row " << k;
  }
  for (size_t p = 0; p < rows * 2; ++p) {
    if (taken[p]) continue;
    for (size_t b = 0; b < row_bytes; ++b) ASSERT_EQ(base[p * row_bytes + b], 'z') << "row " << p << " was written";
  }
}

TEST(RowCopy, RowsLandWhereTheyBelongWhateverTheirWidthAndAlignment) {
  // Narrow or few rows take plain copies; wide rows adding up to over 1 MiB take streaming
  // stores, with partial lines at either end of rows that do not start on a line.
  for (size_t offset : {0, 4, 16, 60}) {
    expect_placed(16, 1000, offset, 1000);
    expect_placed(512, 64, offset, 64);
    expect_placed(512, 4096, offset, 512);
    expect_placed(132, 9000, offset, 1000);
    expect_placed(516, 3000, offset, 3000);
  }
}

// Rows picked by id, gathered (small and streaming sizes) and placed, give the same bytes
// whatever the prefetch distance, and stop at the same bad id even when it lies inside the
// prefetch window (a prefetch is never asked for an id out of range).
TEST(RowCopy, PrefetchingRowsAheadChangesNoByteAndNoStop) {
  const size_t row_bytes = 96;
  const uint64_t rows = 4000;
  std::vector<char> table(rows * row_bytes);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<char>(i * 7 + i / row_bytes);
  for (size_t n : {size_t{50}, size_t{200000}}) {
    std::vector<int64_t> ids(n), positions(n);
    std::mt19937_64 rng(n);
    for (auto& id : ids) id = 1000 + static_cast<int64_t>(rng() % rows);
    std::iota(positions.begin(), positions.end(), 0);
    std::shuffle(positions.begin(), positions.end(), rng);
    const size_t bad = n - 3;
    ids[bad] = 999;  // below the range
    std::vector<std::vector<char>> gathered, placed;
    for (size_t ahead : {size_t{0}, size_t{1}, kPrefetchRows, size_t{64}}) {
      RowSource from;
      from.data = table.data();
      from.row_bytes = row_bytes;
      from.ids = ids.data();
      from.begin = 1000;
      from.rows = rows;
      from.prefetch_rows = ahead;
      std::vector<char> out(n * row_bytes, 'z'), at(n * row_bytes, 'z');
      EXPECT_EQ(copy_rows(from, nullptr, n, out.data()), bad) << "ahead " << ahead;
      EXPECT_EQ(copy_rows(from, positions.data(), n, at.data()), bad) << "ahead " << ahead;
      out.resize(bad * row_bytes);  // past the stop the bytes are unspecified
      for (size_t k = 0; k < bad; ++k) {
        ASSERT_EQ(std::memcmp(out.data() + k * row_bytes, table.data() + (ids[k] - 1000) * row_bytes, row_bytes), 0);
      }
      gathered.push_back(out);
      placed.push_back(at);
    }
    for (size_t v = 1; v < gathered.size(); ++v) EXPECT_EQ(gathered[v], gathered[0]) << "gather, n " << n;
    // Placement writes up to the stop in input order: the same rows landed each time.
    for (size_t v = 1; v < placed.size(); ++v) EXPECT_EQ(placed[v], placed[0]) << "placement, n " << n;
  }
}


// A gather large enough for streaming stores gives the same bytes as plain stores whatever
// the row width (whole lines, a line shared by two rows) and the output's alignment, and
// writes nothing past its rows.
TEST(RowCopy, StreamingGatherEqualsPlainStoresAtAnyWidthAndAlignment) {
  const uint64_t rows = 3000;
  for (size_t row_bytes : {size_t{64}, size_t{132}, size_t{512}, size_t{516}}) {
    std::vector<char> table(rows * row_bytes);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<char>(i * 13 + i / row_bytes);
    const size_t n = (size_t{17} << 20) / row_bytes;  // past the 16 MiB where streaming starts
    std::vector<int64_t> ids(n);
    std::mt19937_64 rng(row_bytes);
    for (auto& id : ids) id = static_cast<int64_t>(rng() % rows);
    for (size_t offset : {0, 4, 16, 60}) {
      SCOPED_TRACE("rows of " + std::to_string(row_bytes) + " bytes, offset " + std::to_string(offset));
      std::vector<std::vector<char>> outs;
      for (bool streaming : {true, false}) {
        std::vector<char> storage(n * row_bytes + 192, 'z');
        char* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 + offset;
        RowSource from;
        from.data = table.data();
        from.row_bytes = row_bytes;
        from.ids = ids.data();
        from.rows = rows;
        from.streaming = streaming;
        ASSERT_EQ(copy_rows(from, nullptr, n, base), n);
        for (const char* after = base + n * row_bytes; after < storage.data() + storage.size(); ++after) {
          ASSERT_EQ(*after, 'z') << "a byte past the rows was written";
        }
        outs.emplace_back(base, base + n * row_bytes);
      }
      for (size_t k = 0; k < n; k += 997) {
        ASSERT_EQ(std::memcmp(outs[0].data() + k * row_bytes, table.data() + ids[k] * row_bytes, row_bytes), 0);
      }
      EXPECT_TRUE(outs[0] == outs[1]);
    }
  }
}

}  // namespace
}  // namespace partita

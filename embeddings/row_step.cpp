#include "embeddings/row_step.h"

#include <string>
#include <vector>

#include "base/error.h"

namespace partita {

void check_row_step(const char* who, uint64_t num_rows, int64_t dim, Span<const int64_t> rows, size_t grad_values) {
  if (grad_values != rows.size() * static_cast<size_t>(dim)) {
    throw Error(std::string(who) + ": " + std::to_string(grad_values) + " gradient values for " +
                std::to_string(rows.size()) + " rows of " + std::to_string(dim));
  }
  std::vector<bool> seen(num_rows, false);
  for (int64_t r : rows) {
    if (static_cast<uint64_t>(r) >= num_rows) {
      throw Error(std::string(who) + ": row " + std::to_string(r) + " outside the table's " + std::to_string(num_rows));
    }
    if (seen[static_cast<size_t>(r)]) {
      throw Error(std::string(who) + ": row " + std::to_string(r) + " given twice (sum duplicates first)");
    }
    seen[static_cast<size_t>(r)] = true;
  }
}

}  // namespace partita

#include "partitioner/feature_transforms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace partita {

namespace {

constexpr const char* kKnown = "normalize_features, standardize, multi_hot:COLUMNS (e.g. multi_hot:3 or multi_hot:3,4)";
// A code beyond this would make a block wider than any feature matrix a job allows.
constexpr int64_t kMaxCode = 1 << 16;

std::string transform_error(const FeatureTransform& t, const std::string& problem) {
  return "feature transform " + t.text() + ": " + problem;
}

void normalize_rows(Dataset& d) {
  const int64_t n = d.num_nodes, f = d.feature_dim;
  const float lowest = *std::min_element(d.x.begin(), d.x.end());
  for (int64_t i = 0; i < n; ++i) {
    float* row = d.x.data() + i * f;
    double sum = 0;
    for (int64_t c = 0; c < f; ++c) {
      row[c] -= lowest;
      sum += row[c];
    }
    const float scale = static_cast<float>(1.0 / std::max(sum, 1.0));
    for (int64_t c = 0; c < f; ++c) row[c] *= scale;
  }
}

void standardize_columns(Dataset& d) {
  const int64_t n = d.num_nodes, f = d.feature_dim;
  std::vector<double> mean(static_cast<size_t>(f), 0.0), var(static_cast<size_t>(f), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < f; ++c) mean[c] += d.x[i * f + c];
  }
  for (double& m : mean) m /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < f; ++c) {
      const double delta = d.x[i * f + c] - mean[c];
      var[c] += delta * delta;
    }
  }
  for (int64_t c = 0; c < f; ++c) {
    const double std = std::sqrt(var[c] / static_cast<double>(n));
    const double scale = std > 0 ? 1.0 / std : 0.0;
    for (int64_t i = 0; i < n; ++i) d.x[i * f + c] = static_cast<float>((d.x[i * f + c] - mean[c]) * scale);
  }
}

void multi_hot(Dataset& d, const FeatureTransform& t) {
  const int64_t n = d.num_nodes, f = d.feature_dim;
  std::vector<bool> coded(static_cast<size_t>(f), false);
  for (int64_t c : t.columns) {
    if (c < 0 || c >= f) {
      throw Error(transform_error(t, "column " + std::to_string(c) + " is not one of the " + std::to_string(f) +
                                         " feature columns"));
    }
    if (coded[c]) throw Error(transform_error(t, "column " + std::to_string(c) + " is named twice"));
    coded[c] = true;
  }
  int64_t width = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c : t.columns) {
      const float v = d.x[i * f + c];
      if (!(v == std::floor(v)) || v < -1 || v > static_cast<float>(kMaxCode)) {
        throw Error(transform_error(t, "node " + std::to_string(i) + ", column " + std::to_string(c) + " holds " +
                                           std::to_string(v) + ", not a category code (an integer in [0, " +
                                           std::to_string(kMaxCode) + "], or -1 for none)"));
      }
      width = std::max(width, static_cast<int64_t>(v) + 1);
    }
  }
  // The block replaces the first coded column; the other coded columns go.
  const int64_t first = *std::min_element(t.columns.begin(), t.columns.end());
  const int64_t out_f = f - static_cast<int64_t>(t.columns.size()) + width;
  std::vector<float> out(static_cast<size_t>(n * out_f), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = d.x.data() + i * f;
    float* dst = out.data() + i * out_f;
    int64_t k = 0;
    for (int64_t c = 0; c < f; ++c) {
      if (c == first) {
        for (int64_t code : t.columns) {
          if (row[code] >= 0) dst[k + static_cast<int64_t>(row[code])] = 1.0f;
        }
        k += width;
      } else if (!coded[c]) {
        dst[k++] = row[c];
      }
    }
  }
  d.x = std::move(out);
  d.feature_dim = out_f;
}

}  // namespace

std::string FeatureTransform::text() const {
  switch (kind) {
    case Kind::kNormalizeFeatures:
      return "normalize_features";
    case Kind::kStandardize:
      return "standardize";
    case Kind::kMultiHot: {
      std::string s = "multi_hot:";
      for (size_t i = 0; i < columns.size(); ++i) s += (i ? "," : "") + std::to_string(columns[i]);
      return s;
    }
  }
  return "?";
}

FeatureTransform parse_feature_transform(const std::string& text, const std::string& what) {
  FeatureTransform t;
  if (text == "normalize_features") return t;
  if (text == "standardize") {
    t.kind = FeatureTransform::Kind::kStandardize;
    return t;
  }
  const std::string prefix = "multi_hot:";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    t.kind = FeatureTransform::Kind::kMultiHot;
    size_t start = prefix.size();
    while (true) {
      const size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t used = 0;
      long long column = -1;
      try {
        column = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (item.empty() || used != item.size() || column < 0) {
        throw UsageError(what + ": '" + item + "' in '" + text + "' is not a feature column (a number >= 0)");
      }
      t.columns.push_back(column);
      if (comma == std::string::npos) return t;
      start = comma + 1;
    }
  }
  throw UsageError(what + ": unknown transform '" + text + "' (known: " + kKnown + ")");
}

void apply_feature_transforms(Dataset& d, const std::vector<FeatureTransform>& transforms) {
  for (const FeatureTransform& t : transforms) {
    if (d.feature_dim <= 0 || d.x.empty()) {
      throw Error(transform_error(t, "dataset '" + d.name + "' has no node features to transform"));
    }
    // The transforms read x as one matrix: columns past a type's own width are padding that
    // must stay zero, and a block a transform adds would shift every type's columns.
    if (!d.node_type_feature_dim.empty()) {
      throw Error(transform_error(t, "dataset '" + d.name +
                                         "' gives its node types features of their own widths; transform "
                                         "each type's features before partitioning"));
    }
    switch (t.kind) {
      case FeatureTransform::Kind::kNormalizeFeatures:
        normalize_rows(d);
        break;
      case FeatureTransform::Kind::kStandardize:
        standardize_columns(d);
        break;
      case FeatureTransform::Kind::kMultiHot:
        multi_hot(d, t);
        break;
    }
    d.transforms.push_back(t.text());
  }
}

}  // namespace partita

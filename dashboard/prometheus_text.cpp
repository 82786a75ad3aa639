#include "dashboard/prometheus_text.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "base/error.h"

namespace partita::dashboard {

namespace {

bool name_char(char c, bool first, bool colon) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return letter || (!first && c >= '0' && c <= '9');
}

bool valid_name(const std::string& name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon)) return false;
  }
  return true;
}

const char* type_name(PrometheusText::Type type) {
  switch (type) {
    case PrometheusText::Type::gauge: return "gauge";
    case PrometheusText::Type::counter: return "counter";
    case PrometheusText::Type::histogram: return "histogram";
  }
  return "untyped";
}

std::string escape_help(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

bool is_valid_metric_name(const std::string& name) { return valid_name(name, true); }

bool is_valid_label_name(const std::string& name) {
  return valid_name(name, false) && name.rfind("__", 0) != 0;
}

void PrometheusText::family(const std::string& name, Type type, const std::string& help) {
  if (!is_valid_metric_name(name)) throw UsageError("invalid Prometheus metric name '" + name + "'");
  if (!written_.insert(name).second) throw UsageError("Prometheus metric family '" + name + "' written twice");
  const std::string total = "_total";
  if (type == Type::counter && (name.size() <= total.size() || name.compare(name.size() - total.size(), total.size(), total) != 0)) {
    throw UsageError("Prometheus counter '" + name + "' does not end in _total");
  }
  name_ = name;
  type_ = type;
  out_ << "# HELP " << name << ' ' << escape_help(help) << "\n# TYPE " << name << ' ' << type_name(type) << '\n';
}

void PrometheusText::write_sample(const std::string& name, const PrometheusLabels& labels, double value,
                                  const std::string& le) {
  out_ << name;
  if (!labels.empty() || !le.empty()) {
    out_ << '{';
    bool first = true;
    for (const auto& [label, text] : labels) {
      if (!is_valid_label_name(label) || label == "le" || label == "job" || label == "instance") {
        throw UsageError("invalid label name '" + label + "' on Prometheus metric " + name);
      }
      out_ << (first ? "" : ",") << label << "=\"" << escape_label_value(text) << '"';
      first = false;
    }
    if (!le.empty()) out_ << (first ? "" : ",") << "le=\"" << le << '"';
    out_ << '}';
  }
  out_ << ' ' << format_sample_value(value) << '\n';
}

void PrometheusText::sample(const PrometheusLabels& labels, double value) {
  if (name_.empty() || type_ == Type::histogram) throw UsageError("a Prometheus sample outside a gauge or counter family");
  write_sample(name_, labels, value);
}

void PrometheusText::histogram(const PrometheusLabels& labels, const std::vector<double>& upper_bounds,
                               const std::vector<uint64_t>& counts, double sum) {
  if (name_.empty() || type_ != Type::histogram) throw UsageError("a Prometheus histogram outside a histogram family");
  if (counts.size() != upper_bounds.size() + 1) {
    throw UsageError("Prometheus histogram " + name_ + ": " + std::to_string(counts.size()) + " counts for " +
                     std::to_string(upper_bounds.size()) + " bounds (one more expected, for +Inf)");
  }
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (i > 0 && !(upper_bounds[i - 1] < upper_bounds[i])) {
      throw UsageError("Prometheus histogram " + name_ + ": bounds not ascending");
    }
    cumulative += counts[i];
    write_sample(name_ + "_bucket", labels, static_cast<double>(cumulative), format_sample_value(upper_bounds[i]));
  }
  cumulative += counts.back();
  write_sample(name_ + "_bucket", labels, static_cast<double>(cumulative), "+Inf");
  write_sample(name_ + "_sum", labels, sum);
  write_sample(name_ + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace partita::dashboard

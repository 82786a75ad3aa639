// Prometheus's text exposition format (version 0.0.4), as a status page's /metrics serves
// it: one small writer, so that every family is spelled the same way and every label value
// is escaped. Prometheus reads the text line by line: `# HELP name text`, `# TYPE name
// type`, then samples `name{label="value",...} number`. This writer keeps the format's
// rules a scrape depends on:
//   - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and
//     never start with "__" (reserved for Prometheus), and a label is never named "job" or
//     "instance" (Prometheus sets those on every scraped series; a target's own would be
//     renamed "exported_job"): UsageError otherwise, a bug of the caller's;
//   - label values escape backslash, double quote and line feed (\\, \", \n); HELP text
//     escapes backslash and line feed; values are Go's float syntax (NaN, +Inf, -Inf);
//   - a family is written once, all its samples together; a counter's name ends in _total;
//   - a histogram writes its cumulative `_bucket{le="..."}` samples, `le="+Inf"` last,
//     then `_sum` and `_count`.
#pragma once

#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace partita::dashboard {

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

// A label value escaped for the text between the double quotes.
std::string escape_label_value(const std::string& value);
// A sample value as the format spells it.
std::string format_sample_value(double value);
bool is_valid_metric_name(const std::string& name);
bool is_valid_label_name(const std::string& name);

class PrometheusText {
 public:
  enum class Type { gauge, counter, histogram };

  // Starts a family: its HELP and TYPE lines. UsageError for an invalid name, a name
  // written before, or a counter whose name does not end in "_total".
  void family(const std::string& name, Type type, const std::string& help);
  // A sample of the current gauge or counter family. UsageError for an invalid label
  // name, or outside a gauge or counter family.
  void sample(const PrometheusLabels& labels, double value);
  // One series of the current histogram family: `upper_bounds` ascending (without +Inf),
  // `counts[i]` the observations in bucket i alone (size upper_bounds + 1, the last for
  // those above every bound), `sum` of all observations. UsageError for sizes that do not
  // match or outside a histogram family.
  void histogram(const PrometheusLabels& labels, const std::vector<double>& upper_bounds,
                 const std::vector<uint64_t>& counts, double sum);

  std::string str() const { return out_.str(); }

 private:
  void write_sample(const std::string& name, const PrometheusLabels& labels, double value, const std::string& le = "");

  std::ostringstream out_;
  std::set<std::string> written_;
  std::string name_;
  Type type_ = Type::gauge;
};

}  // namespace partita::dashboard

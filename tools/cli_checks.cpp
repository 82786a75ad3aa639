#include "tools/cli_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace partita::cli {

namespace {

std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// The value as a double, or false when it is not a number at all.
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

// "" when `text` is an integer of the flag's kind that fits 64 bits, else the complaint.
std::string integer_syntax(const std::string& text, bool is_unsigned) {
  const char* kind = is_unsigned ? "a non-negative integer" : "an integer";
  size_t start = 0;
  if (!text.empty() && (text[0] == '+' || (text[0] == '-' && !is_unsigned))) start = 1;
  if (start >= text.size() || text.find_first_not_of("0123456789", start) != std::string::npos) {
    return "expected " + std::string(kind) + ", got '" + text + "'";
  }
  errno = 0;
  char* end = nullptr;
  if (is_unsigned) {
    (void)std::strtoull(text.c_str(), &end, 10);
    if (errno == ERANGE) {
      return "'" + text + "' is out of range (at most " + std::to_string(std::numeric_limits<uint64_t>::max()) + ")";
    }
  } else {
    (void)std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE) {
      return text[0] == '-' ? "'" + text + "' is too small" : "'" + text + "' is too large";
    }
  }
  return "";
}

void add_syntax_checks(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    // get_type_name() is the base type, then ":" and the validators' descriptions.
    const std::string type = option->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") {
      const bool is_unsigned = base == "UINT";
      option->check(CLI::Validator([is_unsigned](std::string& v) { return integer_syntax(v, is_unsigned); }, ""));
    } else if (base == "FLOAT") {
      option->check(CLI::Validator(
          [](std::string& v) {
            double d = 0;
            if (!parse_number(v, d)) return "expected a number, got '" + v + "'";
            return std::isfinite(d) ? std::string() : "expected a finite number, got '" + v + "'";
          },
          ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) add_syntax_checks(*sub);
}

}  // namespace

CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) {
        double v = 0;
        if (!parse_number(text, v) || v > 0) return std::string();
        return "must be positive, got " + text;
      },
      "> 0");
}

CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) {
        double v = 0;
        if (!parse_number(text, v) || v >= min) return std::string();
        return "must be at least " + num(min) + ", got " + text;
      },
      ">= " + num(min));
}

CLI::Validator in_range(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) {
        double v = 0;
        if (!parse_number(text, v) || (v >= min && v <= max)) return std::string();
        return "must be in [" + num(min) + ", " + num(max) + "], got " + text;
      },
      "in [" + num(min) + ", " + num(max) + "]");
}

void check_number_syntax(CLI::App& app) { add_syntax_checks(app); }

}  // namespace partita::cli

#include "runtime/settings.h"

#include <algorithm>
#include <charconv>

#include "base/error.h"

namespace partita::runtime {

std::optional<int64_t> parse_integer(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

const std::string& required_setting(const Settings& settings, const std::string& key) {
  auto it = settings.find(key);
  if (it == settings.end() || it->second.empty()) throw UsageError("setting '" + key + "' is missing");
  return it->second;
}

std::string text_setting(const Settings& settings, const std::string& key, const std::string& fallback) {
  auto it = settings.find(key);
  if (it == settings.end()) return fallback;
  if (it->second.empty()) throw UsageError("setting '" + key + "' is empty");
  return it->second;
}

const std::string& path_setting(const Settings& settings, const std::string& key) {
  const std::string& text = required_setting(settings, key);
  const auto bad = [&](const std::string& why) { return UsageError("setting '" + key + "': '" + text + "' " + why); };
  if (text.front() != '/') throw bad("is not an absolute path");
  if (text.find('\0') != std::string::npos) throw bad("holds a NUL byte");
  // Components between slashes; a trailing slash is fine ("/data/parts/").
  for (size_t begin = 1; begin < text.size();) {
    const size_t end = std::min(text.find('/', begin), text.size());
    const std::string component = text.substr(begin, end - begin);
    if (component == "..") throw bad("has a '..' component");
    if (component == ".") throw bad("has a '.' component");
    if (component.empty()) throw bad("has an empty component ('//')");
    begin = end + 1;
  }
  return text;
}

namespace {

int64_t in_range(const std::string& key, const std::string& text, int64_t min, int64_t max) {
  const std::optional<int64_t> value = parse_integer(text);
  if (!value) throw UsageError("setting '" + key + "': '" + text + "' is not a whole number");
  if (*value < min || *value > max) {
    throw UsageError("setting '" + key + "': " + text + " is not in " + std::to_string(min) + ".." +
                     std::to_string(max));
  }
  return *value;
}

}  // namespace

int64_t integer_setting(const Settings& settings, const std::string& key, int64_t min, int64_t max) {
  return in_range(key, required_setting(settings, key), min, max);
}

int64_t integer_setting(const Settings& settings, const std::string& key, int64_t min, int64_t max,
                        int64_t fallback) {
  auto it = settings.find(key);
  return it == settings.end() ? fallback : in_range(key, it->second, min, max);
}

bool flag_setting(const Settings& settings, const std::string& key, bool fallback) {
  auto it = settings.find(key);
  if (it == settings.end()) return fallback;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  throw UsageError("setting '" + key + "': '" + it->second + "' is not true or false");
}

}  // namespace partita::runtime

// Settings of a spawned actor, and the one parser of their values: every actor type reads
// its settings with these, so that all agree on what a number or a flag is ("12abc" is not
// 12) and every error names the setting.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace partita::runtime {

// Arguments of a spawned actor. A string map because CAF ships it as a built-in message
// type (no registration needed on either side) and it reads as a config section.
using Settings = std::map<std::string, std::string>;

// The whole of `text` as a decimal integer (an optional '-', then digits, nothing else, no
// spaces); nullopt otherwise or when it does not fit.
std::optional<int64_t> parse_integer(const std::string& text);

// Each throws UsageError naming the setting: "setting 'rank': '12abc' is not a whole
// number", "setting 'part' is missing".
//
// A required setting's text, which must not be empty.
const std::string& required_setting(const Settings& settings, const std::string& key);
// An optional setting's text: `fallback` when absent; present but empty is an error.
std::string text_setting(const Settings& settings, const std::string& key, const std::string& fallback);
// A required whole number in [min, max].
int64_t integer_setting(const Settings& settings, const std::string& key, int64_t min, int64_t max);
// An optional whole number in [min, max]: `fallback` when absent.
int64_t integer_setting(const Settings& settings, const std::string& key, int64_t min, int64_t max,
                        int64_t fallback);
// An optional flag, "true" or "false": `fallback` when absent.
bool flag_setting(const Settings& settings, const std::string& key, bool fallback);
// A required path on the daemon's machine: absolute, and with no '.', '..' or empty
// components, so a spawn request names exactly the folder it means and cannot climb out
// of it ("setting 'dir': 'parts' is not an absolute path", "... '/data/../etc' has a '..'
// component"). The text is returned as given. Whether the path exists is not checked here:
// a caller that opens it must fail alike for any path that is not what it expects
// (actors/actor_types.h, partition_dir_setting), so that errors do not tell a remote
// caller which files exist.
const std::string& path_setting(const Settings& settings, const std::string& key);

}  // namespace partita::runtime

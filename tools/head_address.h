// Where the commands that talk to a cluster's head find it, so that `--address` is needed
// only to pick another head: `--address` when given, else $PARTITA_ADDRESS, else the address
// `partita start --head` wrote to ~/.partita/head_address, else 127.0.0.1:7070. The same
// folder holds what `start` started: logs/ (each daemon's log) and a pid file per daemon.
#pragma once

#include <filesystem>
#include <string>

namespace partita::cli {

// ~/.partita ($HOME/.partita). Throws Error when HOME is not set.
std::filesystem::path partita_home();

// The head's address by the precedence above; `flag` is --address ("" when not given).
std::string head_address(const std::string& flag);

// Whether an address comes from anything but the built-in default (`flag`, the
// environment or the file).
bool head_address_given(const std::string& flag);

// Writes `address` to ~/.partita/head_address (creating the folder), for later commands.
void remember_head_address(const std::string& address);

// Removes ~/.partita/head_address if it holds `address` (a cluster that was stopped).
void forget_head_address(const std::string& address);

// The help text of an --address flag that follows this precedence.
inline constexpr const char* kHeadAddressHelp =
    "HOST:PORT of the head [default: $PARTITA_ADDRESS, else ~/.partita/head_address (written by partita start "
    "--head), else 127.0.0.1:7070]";

}  // namespace partita::cli

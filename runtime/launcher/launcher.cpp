#include "runtime/launcher/launcher.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <caf/all.hpp>
#include <cctype>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "runtime/launcher/launched_process.h"

extern char** environ;

namespace partita::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// How long the launcher waits for the sink to take a message; past it the driver is taken
// as gone and the rest of the output is dropped (the launcher's owner going stops it soon).
constexpr std::chrono::seconds kSinkDeadline{10};

Error bad(const std::string& what) { return Error("launch request: " + what); }

bool within(const fs::path& path, const fs::path& folder) {
  const std::string p = path.string(), f = folder.string();
  return p.size() > f.size() && p.compare(0, f.size(), f) == 0 && p[f.size()] == '/';
}

std::string checked_text(const json& value, const std::string& field) {
  if (!value.is_string()) throw bad("'" + field + "' must be text");
  const std::string text = value.get<std::string>();
  if (text.size() > kMaxArgBytes) {
    throw bad("'" + field + "' is " + std::to_string(text.size()) + " bytes; at most " + std::to_string(kMaxArgBytes));
  }
  if (text.find('\0') != std::string::npos) throw bad("'" + field + "' holds a NUL byte");
  return text;
}

// The interpreter's absolute path: argv[0] by name on the daemon's PATH, or as given.
std::string interpreter_path(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (program[0] != '/') throw bad("the program '" + program + "' is a relative path; give a name or an absolute path");
    if (!is_python_interpreter_name(fs::path(program).filename().string())) {
      throw bad("the program '" + program + "' is not a Python interpreter (python, python3 or python3.N)");
    }
    if (::access(program.c_str(), X_OK) != 0) throw bad("no executable " + program + " on this node");
    return program;
  }
  if (!is_python_interpreter_name(program)) {
    throw bad("the program '" + program + "' is not a Python interpreter (python, python3 or python3.N)");
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') {
      const std::string candidate = dir + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  throw bad("no " + program + " on this node's PATH");
}

// The staged folder `cwd` must be one of the cache's folders.
std::string checked_cwd(const json& value, const LauncherOptions& options) {
  const std::string cwd = checked_text(value, "cwd");
  const fs::path path(cwd);
  if (!path.is_absolute() || path.lexically_normal() != path) throw bad("'cwd' " + cwd + " is not an absolute, normal path");
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  const fs::path folders = fs::weakly_canonical(fs::path(options.cache_dir) / "folders", ec);
  if (options.cache_dir.empty() || real.empty() || real.parent_path() != folders || !fs::is_directory(real)) {
    throw bad("'cwd' " + cwd + " is not a folder staged on this node");
  }
  return real.string();
}

// The script: a relative path to a regular file inside `cwd`, links resolved into the cache.
void check_script(const std::string& script, const std::string& cwd, const LauncherOptions& options) {
  const fs::path path(script);
  if (script.empty() || path.is_absolute()) throw bad("the script '" + script + "' must be a path inside the working folder");
  for (const auto& part : path) {
    if (part == "." || part == ".." || part.empty()) {
      throw bad("the script '" + script + "' has a '" + part.string() + "' component: it must stay inside the working folder");
    }
  }
  if (script[0] == '-') throw bad("the script '" + script + "' starts with '-': give the script before any option");
  std::error_code ec;
  const fs::path real = fs::canonical(fs::path(cwd) / path, ec);
  if (ec || !fs::is_regular_file(real) || !within(real, fs::weakly_canonical(options.cache_dir))) {
    throw bad("no script '" + script + "' in the staged working folder");
  }
}

// `-m MODULE`: one of the module's files is a regular file inside `cwd`.
void check_module(const std::string& module, const std::string& cwd, const LauncherOptions& options) {
  std::vector<std::string> files;
  try {
    files = python_module_files(module);
  } catch (const Error& e) {
    throw bad(e.what());
  }
  const fs::path cache = fs::weakly_canonical(options.cache_dir);
  for (const std::string& file : files) {
    std::error_code ec;
    const fs::path real = fs::canonical(fs::path(cwd) / file, ec);
    if (!ec && fs::is_regular_file(real) && within(real, cache)) return;
  }
  throw bad("no module '" + module + "' in the staged working folder (looked for " + files[0] + " and " + files[1] + ")");
}

struct Launch {
  int32_t index = 0;
  ProcessSpec process;
};

// The environment: the daemon's, less its PARTITA_ variables, plus the request's.
std::vector<std::string> environment(const std::map<std::string, std::string>& wanted, const std::string& cwd,
                                     const LauncherOptions& options) {
  std::vector<std::string> env;
  std::string python_path = cwd;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("PARTITA_", 0) == 0) continue;
    if (entry.rfind("PYTHONPATH=", 0) == 0) {
      if (entry.size() > 11) python_path += ":" + entry.substr(11);
      continue;
    }
    env.push_back(entry);
  }
  env.push_back("PYTHONPATH=" + python_path);
  // Lines as they are printed, not when a pipe's buffer fills or the process ends.
  if (std::none_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("PYTHONUNBUFFERED=", 0) == 0; })) {
    env.push_back("PYTHONUNBUFFERED=1");
  }
  for (const auto& [name, value] : wanted) env.push_back(name + "=" + value);
  if (!options.tls_dir.empty()) env.push_back("PARTITA_TLS_DIR=" + options.tls_dir);
  return env;
}

Launch parse_launch(const std::string& text, const LauncherOptions& options) {
  if (text.size() > 2 * kMaxArgvBytes) throw bad("it is " + std::to_string(text.size()) + " bytes");
  const json in = json::parse(text, nullptr, false);
  if (!in.is_object()) throw bad("not a JSON object");
  for (const char* field : {"index", "argv", "cwd", "env"}) {
    if (!in.contains(field)) throw bad(std::string("needs '") + field + "'");
  }
  Launch launch;
  if (!in["index"].is_number_integer() || in["index"].get<int64_t>() < 0 || in["index"].get<int64_t>() > (1 << 20)) {
    throw bad("'index' must be a whole number from 0 to " + std::to_string(1 << 20));
  }
  launch.index = static_cast<int32_t>(in["index"].get<int64_t>());
  const json& argv = in["argv"];
  if (!argv.is_array() || argv.size() < 2 || argv.size() > kMaxArgs) {
    throw bad("'argv' must list the interpreter, the script and at most " + std::to_string(kMaxArgs - 2) + " arguments");
  }
  size_t bytes = 0;
  for (size_t i = 0; i < argv.size(); ++i) {
    launch.process.argv.push_back(checked_text(argv[i], "argv[" + std::to_string(i) + "]"));
    bytes += launch.process.argv.back().size();
  }
  if (bytes > kMaxArgvBytes) throw bad("'argv' is " + std::to_string(bytes) + " bytes; at most " + std::to_string(kMaxArgvBytes));
  launch.process.program = interpreter_path(launch.process.argv[0]);
  launch.process.cwd = checked_cwd(in["cwd"], options);
  if (launch.process.argv[1] == "-m") {
    if (launch.process.argv.size() < 3) throw bad("'argv' has '-m' but no module after it");
    check_module(launch.process.argv[2], launch.process.cwd, options);
  } else {
    check_script(launch.process.argv[1], launch.process.cwd, options);
  }
  const json& env = in["env"];
  if (!env.is_object() || env.size() > kMaxEnv) throw bad("'env' must be an object of at most " + std::to_string(kMaxEnv) + " variables");
  std::map<std::string, std::string> wanted;
  for (const auto& [name, value] : env.items()) {
    const bool named = name.size() > 8 && name.size() <= 64 && name.rfind("PARTITA_", 0) == 0 &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!named) throw bad("'env' may set PARTITA_ variables only (upper case, digits, '_'), not '" + name.substr(0, 64) + "'");
    if (name == "PARTITA_TLS_DIR") throw bad("'env' may not set PARTITA_TLS_DIR: the node sets its own");
    wanted[name] = checked_text(value, "env." + name);
  }
  launch.process.env = environment(wanted, launch.process.cwd, options);
  return launch;
}

// Sends one message to the sink and waits for its answer; false once the sink is gone.
template <class... Ts>
bool tell_sink(caf::actor_system& system, const caf::actor& sink, std::atomic<bool>& gone, Ts&&... xs) {
  if (gone.load()) return false;
  caf::scoped_actor self{system};
  bool ok = false;
  self->request(sink, caf::duration(kSinkDeadline), std::forward<Ts>(xs)...)
      .receive([&](bool) { ok = true; }, [&](caf::error&) {});
  if (!ok) gone.store(true);
  return ok;
}

using done_atom = caf::atom_constant<caf::atom("p_ldone")>;

struct LauncherState {
  std::unique_ptr<LaunchedProcess> process;  // destroyed with the launcher: stops its process group
  static inline const char* name = "partita.launcher";
};

caf::behavior launcher(caf::stateful_actor<LauncherState>* self, LauncherOptions options) {
  return {
      [self, options](launch_atom, const std::string& request, const caf::actor& sink) -> caf::result<int64_t> {
        if (self->state.process) return caf::make_error(caf::sec::invalid_argument, "this launcher runs a process already");
        if (!sink) return caf::make_error(caf::sec::invalid_argument, "launch request: no sink for the output");
        try {
          Launch launch = parse_launch(request, options);
          auto gone = std::make_shared<std::atomic<bool>>(false);
          caf::actor_system& system = self->system();
          const int32_t index = launch.index;
          caf::actor me = caf::actor_cast<caf::actor>(self);
          auto on_output = [&system, sink, gone, index](const std::string& lines) {
            tell_sink(system, sink, *gone, launch_output_atom::value, index, lines);
          };
          auto on_exit = [&system, sink, gone, index, me](int code, const std::string& tail) {
            tell_sink(system, sink, *gone, launch_exit_atom::value, index, static_cast<int32_t>(code), tail);
            caf::anon_send(me, done_atom::value);
          };
          const std::string program = launch.process.program, cwd = launch.process.cwd;
          self->state.process = std::make_unique<LaunchedProcess>(std::move(launch.process), on_output, on_exit);
          spdlog::info("launcher: process {} runs {} in {} as pid {}", index, program, cwd, self->state.process->pid());
          return static_cast<int64_t>(self->state.process->pid());
        } catch (const std::exception& e) {
          spdlog::warn("launcher: {}", e.what());
          self->quit(caf::exit_reason::user_shutdown);
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        }
      },
      [self](launch_stop_atom, int64_t grace_ms) {
        if (self->state.process) {
          self->state.process->stop(std::chrono::milliseconds(std::clamp<int64_t>(grace_ms, 0, kMaxStopGraceMs)));
        }
        self->quit(caf::exit_reason::user_shutdown);
      },
      [self](done_atom) { self->quit(caf::exit_reason::user_shutdown); },
  };
}

}  // namespace

bool is_python_interpreter_name(const std::string& name) {
  if (name == "python" || name == "python3") return true;
  return name.size() > 8 && name.rfind("python3.", 0) == 0 &&
         std::all_of(name.begin() + 8, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::vector<std::string> python_module_files(const std::string& module) {
  if (module.empty() || module.size() > 255) throw Error("a module name is 1 to 255 bytes, not " + std::to_string(module.size()));
  std::string path;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(module.find('.', start), module.size());
    const std::string part = module.substr(start, end - start);
    const bool identifier =
        !part.empty() && !std::isdigit(static_cast<unsigned char>(part[0])) &&
        std::all_of(part.begin(), part.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier) throw Error("'" + module + "' is not a module name (dotted identifiers, e.g. pkg.train)");
    path += (path.empty() ? "" : "/") + part;
    if (end == module.size()) break;
    start = end + 1;
  }
  return {path + ".py", path + "/__main__.py"};
}

void add_launcher_type(ActorTypeRegistry& registry, LauncherOptions options) {
  registry.add(kLauncherType, [options](caf::actor_system& system, const Settings&) {
    return system.spawn<caf::detached>(launcher, options);
  });
}

}  // namespace partita::runtime

#include "training/python_job.h"

#include <spdlog/spdlog.h>

#include <caf/all.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "runtime/errors.h"
#include "runtime/launcher/launcher.h"
#include "runtime/runtime.h"
#include "runtime/staging/node_staging.h"
#include "training/usable_nodes.h"

namespace partita {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

bool staged_entry(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  return !name.empty() && name[0] != '.' && name != "__pycache__" && e.path().extension() != ".pyc";
}

// The working folder as staging units: its files (mounted at the top) and each sub-folder's
// files (mounted at its name), as training/python_job.h says.
std::vector<runtime::ServedUnit> workdir_units(const std::string& workdir) {
  std::vector<runtime::ServedUnit> units;
  std::vector<std::string> top;
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(workdir)) {
    if (!staged_entry(e)) continue;
    if (e.is_regular_file()) top.push_back(e.path().filename().string());
    if (e.is_directory()) folders.push_back(e.path().filename().string());
  }
  std::sort(top.begin(), top.end());
  std::sort(folders.begin(), folders.end());
  units.push_back({workdir, runtime::describe_unit(workdir, "", top)});
  for (const std::string& folder : folders) {
    const std::string dir = workdir + "/" + folder;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (staged_entry(e) && e.is_regular_file()) files.push_back(e.path().filename().string());
    }
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    units.push_back({dir, runtime::describe_unit(dir, folder, files)});
  }
  for (const auto& u : units) {
    if (u.unit.files.size() > runtime::kMaxStagedFilesPerUnit) {
      throw UsageError("the working folder " + u.dir + " holds " + std::to_string(u.unit.files.size()) +
                       " files; a Python job stages at most " + std::to_string(runtime::kMaxStagedFilesPerUnit) +
                       " per folder");
    }
  }
  return units;
}

// Stages the working folder on every node of `rt`; returns the staged folder on each.
std::vector<std::string> stage_workdir(runtime::Runtime& rt, const std::string& workdir, const PythonJobOptions& options) {
  const std::vector<std::vector<runtime::ServedUnit>> served(rt.num_nodes(), workdir_units(workdir));
  std::vector<std::string> dirs;
  const auto outcomes =
      runtime::stage_on_nodes(rt, served, options.staging_host, options.staging_deadline, "the working folder");
  for (int node = 0; node < rt.num_nodes(); ++node) {
    spdlog::info("staged the working folder on {}: {} byte(s) copied, {} unit(s) reused from its cache",
                 rt.node_name(node), outcomes[node].bytes_copied, outcomes[node].units_reused);
    dirs.push_back(outcomes[node].folder);
  }
  return dirs;
}

// How an attempt ended.
struct AttemptEnd {
  enum Kind { done, failed, lost, cancelled } kind = done;
  std::string what;
  int code = 0;
};

// One attempt's ranks, their launchers and what became of them.
class Attempt {
 public:
  Attempt(runtime::Runtime& rt, const PythonJobOptions& options) : rt_(rt), options_(options), self_(rt.system()) {}
  ~Attempt() { stop_all(); }

  void launch(int rank, int node, const std::string& request) {
    // Owned by this attempt: its launchers stop when it ends, however it ends.
    const caf::actor launcher = rt_.spawn(node, runtime::kLauncherType, {}, caf::actor_cast<caf::actor>(self_));
    self_->monitor(launcher);
    ranks_.push_back({launcher, node, -1, false, false, 0});
    std::optional<std::string> failure;
    self_->request(launcher, caf::duration(rt_.timeout()), runtime::launch_atom::value, request,
                   caf::actor_cast<caf::actor>(self_))
        .receive([&](int64_t pid) { ranks_.back().pid = pid; },
                 [&](caf::error& e) { failure = runtime::describe(rt_.system(), e); });
    if (failure) throw Error("rank " + std::to_string(rank) + " on " + rt_.node_name(node) + ": " + *failure);
  }

  std::string owner() const { return runtime::owner_key(caf::actor_cast<caf::actor_addr>(self_)); }

  std::vector<int64_t> pids() const {
    std::vector<int64_t> p;
    for (const auto& r : ranks_) p.push_back(r.pid);
    return p;
  }

  // Until every rank exited 0, one failed, a node was lost or the job was cancelled.
  AttemptEnd wait() {
    for (;;) {
      std::optional<AttemptEnd> end;
      self_->receive(
          [&](runtime::launch_output_atom, int32_t index, std::string& lines) { return output(index, lines); },
          [&](runtime::launch_exit_atom, int32_t index, int32_t code, std::string& tail) {
            if (index < 0 || index >= static_cast<int32_t>(ranks_.size())) return false;
            ranks_[index].exited = true;
            ranks_[index].code = code;
            if (code != 0 && !end) end = failure(index, code, tail);
            return true;
          },
          [&](caf::down_msg& msg) {
            const int index = rank_of(msg.source);
            if (index < 0) return;
            ranks_[index].down = true;
            if (!ranks_[index].exited && !end) {
              end = failure(index, -1, "its launcher stopped before its process ended (" +
                                           runtime::describe(rt_.system(), msg.reason) + ")");
            }
          },
          caf::after(options_.poll) >> [&] {});
      if (!end && options_.cancel && options_.cancel->cancelled()) end = AttemptEnd{AttemptEnd::cancelled, "job cancelled", 0};
      if (!end && !rt_.lost_nodes().empty()) end = lost_end();
      bool all_done = true;
      for (const auto& r : ranks_) all_done = all_done && r.exited && r.code == 0;
      if (!end && all_done) end = AttemptEnd{AttemptEnd::done, "", 0};
      if (end) {
        stop_all();
        return *end;
      }
    }
  }

  // Stops every rank still running and waits for their launchers to go (bounded).
  void stop_all() {
    for (auto& r : ranks_) {
      if (!r.down && !r.exited) self_->send(r.launcher, runtime::launch_stop_atom::value,
                                            static_cast<int64_t>(options_.stop_grace.count()));
    }
    const auto until = Clock::now() + options_.stop_grace + std::chrono::seconds(10);
    while (Clock::now() < until) {
      bool all_down = true;
      for (const auto& r : ranks_) all_down = all_down && r.down;
      if (all_down) return;
      self_->receive(
          [&](runtime::launch_output_atom, int32_t index, std::string& lines) { return output(index, lines); },
          [&](runtime::launch_exit_atom, int32_t index, int32_t code, std::string&) {
            if (index >= 0 && index < static_cast<int32_t>(ranks_.size())) {
              ranks_[index].exited = true;
              ranks_[index].code = code;
            }
            return true;
          },
          [&](caf::down_msg& msg) {
            const int index = rank_of(msg.source);
            if (index >= 0) ranks_[index].down = true;
          },
          caf::after(std::chrono::milliseconds(200)) >> [&] {
            for (auto& r : ranks_) {
              if (!r.down && rt_.node_of(r.launcher.address()) >= 0 && node_lost(r.node)) r.down = true;
            }
          });
    }
    spdlog::warn("some ranks did not report their end within {} ms of their stop", options_.stop_grace.count() + 10000);
  }

 private:
  struct Rank {
    caf::actor launcher;
    int node;
    int64_t pid;
    bool exited, down;
    int code;
  };

  bool output(int32_t index, const std::string& lines) {
    if (index < 0 || index >= static_cast<int32_t>(ranks_.size())) return false;
    if (options_.on_output) options_.on_output(index, lines);
    return true;
  }

  int rank_of(const caf::actor_addr& source) const {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].launcher.address() == source) return static_cast<int>(i);
    }
    return -1;
  }

  bool node_lost(int node) const {
    const std::vector<int> gone = rt_.lost_nodes();
    return std::find(gone.begin(), gone.end(), node) != gone.end();
  }

  AttemptEnd lost_end() const {
    std::string names;
    for (int n : rt_.lost_nodes()) names += (names.empty() ? "" : ", ") + rt_.node_name(n);
    return AttemptEnd{AttemptEnd::lost, names, 0};
  }

  // A rank's failure: the script's, unless a node's loss comes with it.
  AttemptEnd failure(int index, int code, const std::string& tail) {
    if (rt_.lost_node_within(kLossGrace)) return lost_end();
    std::string what = "rank " + std::to_string(index) + " on " + rt_.node_name(ranks_[index].node);
    what += code >= 0 ? " exited with status " + std::to_string(code) : "";
    if (code > 128) what += " (signal " + std::to_string(code - 128) + ")";
    std::string t = tail;
    while (!t.empty() && t.back() == '\n') t.pop_back();
    if (!t.empty()) what += code >= 0 ? "; the end of its stderr:\n" + t : ": " + t;
    return AttemptEnd{AttemptEnd::failed, what, code};
  }

  runtime::Runtime& rt_;
  const PythonJobOptions& options_;
  caf::scoped_actor self_;
  std::vector<Rank> ranks_;
};

std::string launch_request(const PythonJob& job, const PythonJobOptions& options, int rank, int world,
                           const std::string& cwd, const std::string& node, int restarts) {
  json env = {{"PARTITA_RANK", std::to_string(rank)},
              {"PARTITA_WORLD_SIZE", std::to_string(world)},
              {"PARTITA_ADDRESS", options.head},
              {"PARTITA_GROUP", options.id + "-" + std::to_string(restarts)},
              {"PARTITA_JOB", options.id},
              {"PARTITA_RESTART", std::to_string(restarts)},
              {"PARTITA_CHECKPOINT_DIR", options.checkpoint_dir},
              {"PARTITA_NODE", node}};
  return json{{"index", rank}, {"argv", job.command}, {"cwd", cwd}, {"env", env}}.dump();
}

// The live nodes (lost ones left out) whose slots hold `world` ranks: at once on the first
// attempt, else waiting up to placement_wait. Throws PlacementError saying what is missing.
std::vector<NodeOffer> nodes_for(int world, const PythonJob& job, const PythonJobOptions& options,
                                 const std::map<std::string, uint64_t>& lost, int restarts) {
  const auto until = Clock::now() + (restarts > 0 ? options.placement_wait : std::chrono::milliseconds(0));
  for (;;) {
    std::vector<NodeOffer> nodes = usable_nodes(options.live_nodes(), lost);
    const int64_t slots = static_cast<int64_t>(nodes.size()) * job.slots_per_node;
    if (world > 0 && slots >= world) return nodes;
    if (world == 0 && slots > 0) return nodes;
    if (Clock::now() >= until) {
      const std::string have = std::to_string(slots) + " trainer slot(s) (" + std::to_string(nodes.size()) +
                               " live node(s), " + std::to_string(job.slots_per_node) + " slot(s) each: --slots-per-node)";
      if (world == 0) throw PlacementError("the cluster has no live node to run the job's ranks on");
      throw PlacementError("world size " + std::to_string(world) + " is larger than the cluster's " + have +
                           (restarts > 0 ? " after losing a node (waited " +
                                               std::to_string(options.placement_wait.count() / 1000) + " s)"
                                         : ""));
    }
    if (options.cancel && options.cancel->cancelled()) throw JobCancelled("job cancelled while waiting for nodes", 0, 0, 0);
    std::this_thread::sleep_for(options.poll);
  }
}

// Connects to the nodes. A node may still be closing the previous attempt's connection
// (CAF refuses a second handshake from the same process while the first is open): a
// failure is retried until placement_wait passed.
std::unique_ptr<runtime::Runtime> connect(const std::vector<std::string>& addresses, const PythonJobOptions& options) {
  const auto until = Clock::now() + options.placement_wait;
  for (;;) {
    try {
      return runtime::Runtime::connect(options.system, addresses, options.connect_timeout);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      if (Clock::now() >= until) throw;
      if (options.cancel && options.cancel->cancelled()) throw JobCancelled("job cancelled while connecting to its nodes", 0, 0, 0);
      spdlog::info("{}; connecting again", e.what());
      std::this_thread::sleep_for(options.poll);
    }
  }
}

}  // namespace

std::string python_job_json(const PythonJob& job) {
  return json{{"python",
               {{"command", job.command},
                {"workdir", job.workdir},
                {"ranks", job.ranks},
                {"slots_per_node", job.slots_per_node},
                {"max_restarts", job.max_restarts}}}}
      .dump(2);
}

bool is_python_job(const std::string& text) {
  const json in = json::parse(text, nullptr, false);
  return in.is_object() && in.contains("python");
}

PythonJob python_job_from_json(const std::string& text) {
  const json in = json::parse(text, nullptr, false);
  const auto bad = [](const std::string& what) { return UsageError("Python job: " + what); };
  if (!in.is_object() || !in.contains("python") || !in["python"].is_object()) throw bad("not a JSON object with 'python'");
  const json& p = in["python"];
  PythonJob job;
  if (!p.contains("command") || !p["command"].is_array()) throw bad("needs 'command', a list of texts");
  for (const auto& a : p["command"]) {
    if (!a.is_string()) throw bad("'command' must hold texts only");
    job.command.push_back(a.get<std::string>());
  }
  if (!p.contains("workdir") || !p["workdir"].is_string()) throw bad("needs 'workdir', a folder");
  job.workdir = p["workdir"].get<std::string>();
  const auto integer = [&](const char* field, int min, int max, int fallback) {
    if (!p.contains(field)) return fallback;
    if (!p[field].is_number_integer() || p[field].get<int64_t>() < min || p[field].get<int64_t>() > max) {
      throw bad(std::string("'") + field + "' must be a whole number from " + std::to_string(min) + " to " +
                std::to_string(max));
    }
    return static_cast<int>(p[field].get<int64_t>());
  };
  job.ranks = integer("ranks", 0, kMaxPythonRanks, 0);
  job.slots_per_node = integer("slots_per_node", 1, kMaxSlotsPerNode, 1);
  job.max_restarts = integer("max_restarts", 0, 100, 3);
  return job;
}

namespace {

// `python3 -m MODULE`: a file of the module inside the (canonical) working folder, within
// the depth that is staged.
void check_module(const PythonJob& job) {
  if (job.command.size() < 3) throw UsageError("the command has '-m' but no module after it, e.g. -- python3 -m pkg.train");
  std::vector<std::string> files;
  try {
    files = runtime::python_module_files(job.command[2]);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  for (const std::string& file : files) {
    const fs::path path(file);
    if (!fs::is_regular_file(fs::path(job.workdir) / path)) continue;
    if (std::distance(path.begin(), path.end()) > 2) {
      throw UsageError("the module " + job.command[2] + " (" + file + ") is more than one folder down the working folder " +
                       job.workdir + "; a Python job stages its files and those one folder down");
    }
    return;
  }
  throw UsageError("no module " + job.command[2] + " in the working folder " + job.workdir + " (looked for " + files[0] +
                   " and " + files[1] + ")");
}

}  // namespace

PythonJob checked_python_job(PythonJob job) {
  if (job.command.size() < 2) {
    throw UsageError("a Python job's command is PYTHON SCRIPT [ARGS...] or PYTHON -m MODULE [ARGS...], e.g. -- python3 train.py --epochs 3");
  }
  if (job.command.size() > runtime::kMaxArgs) {
    throw UsageError("a Python job's command has " + std::to_string(job.command.size()) + " words; at most " +
                     std::to_string(runtime::kMaxArgs));
  }
  size_t bytes = 0;
  for (const auto& a : job.command) {
    if (a.size() > runtime::kMaxArgBytes) throw UsageError("an argument of the command is over " + std::to_string(runtime::kMaxArgBytes) + " bytes");
    bytes += a.size();
  }
  if (bytes > runtime::kMaxArgvBytes) throw UsageError("the command is over " + std::to_string(runtime::kMaxArgvBytes) + " bytes");
  const std::string program = fs::path(job.command[0]).filename().string();
  if (!runtime::is_python_interpreter_name(program)) {
    throw UsageError("'" + job.command[0] + "' is not a Python interpreter: a Python job runs python3 SCRIPT [ARGS...]");
  }
  std::error_code ec;
  const fs::path workdir = fs::canonical(job.workdir, ec);
  if (ec || !fs::is_directory(workdir)) throw UsageError("the working folder " + job.workdir + " does not exist");
  job.workdir = workdir.string();
  if (job.command[1] == "-m") {
    check_module(job);
    return job;
  }
  const fs::path given(job.command[1]);
  const fs::path script = given.is_absolute() ? given : workdir / given;
  const fs::path real = fs::weakly_canonical(script, ec);
  const fs::path relative = real.lexically_relative(workdir);
  if (relative.empty() || *relative.begin() == "..") {
    throw UsageError("the script " + job.command[1] + " is outside the working folder " + workdir.string() +
                     " (only that folder is staged to the nodes; run submit from the folder that holds it)");
  }
  if (!fs::is_regular_file(real)) throw UsageError("no script " + job.command[1] + " in the working folder " + workdir.string());
  if (std::distance(relative.begin(), relative.end()) > 2) {
    throw UsageError("the script " + job.command[1] + " is more than one folder down the working folder " +
                     workdir.string() + "; a Python job stages its files and those one folder down");
  }
  job.command[1] = relative.string();
  return job;
}

void run_python_job(const PythonJob& given, const PythonJobOptions& options) {
  const PythonJob job = checked_python_job(given);
  fs::create_directories(options.checkpoint_dir);
  std::map<std::string, uint64_t> lost;
  int world = job.ranks;
  for (int restarts = 0;; ++restarts) {
    const std::vector<NodeOffer> nodes = nodes_for(world, job, options, lost, restarts);
    if (world == 0) world = static_cast<int>(std::min<int64_t>(kMaxPythonRanks, nodes.size() * job.slots_per_node));
    // Rank r on node r mod N; the runtime's nodes are the used ones.
    const int used_count = std::min<int>(world, static_cast<int>(nodes.size()));
    std::vector<std::string> addresses, node_of_rank;
    for (int n = 0; n < used_count; ++n) addresses.push_back(nodes[n].address);
    for (int r = 0; r < world; ++r) node_of_rank.push_back(nodes[r % used_count].name);
    std::unique_ptr<runtime::Runtime> rt = connect(addresses, options);
    AttemptEnd end;
    {
      const std::vector<std::string> staged = stage_workdir(*rt, job.workdir, options);
      Attempt attempt(*rt, options);
      if (options.on_owner) options.on_owner(attempt.owner());
      try {
        for (int r = 0; r < world; ++r) {
          const int node = r % used_count;
          attempt.launch(r, node, launch_request(job, options, r, world, staged[node], nodes[node].name, restarts));
        }
      } catch (const Error&) {
        if (rt->lost_nodes().empty()) throw;
      }
      if (options.on_started) options.on_started(node_of_rank, attempt.pids());
      end = attempt.wait();
    }
    switch (end.kind) {
      case AttemptEnd::done:
        return;
      case AttemptEnd::cancelled:
        throw JobCancelled("job cancelled; every rank stopped", 0, 0, 0);
      case AttemptEnd::failed:
        throw ScriptFailed(end.what, end.code);
      case AttemptEnd::lost:
        break;
    }
    for (int n : rt->lost_nodes()) lost[nodes[n].address] = nodes[n].member;
    if (restarts >= job.max_restarts) {
      throw Error("lost " + end.what + " and no restart is left (--max-restarts " + std::to_string(job.max_restarts) + ")");
    }
    const std::string why = "lost " + end.what + "; restart " + std::to_string(restarts + 1) + " of at most " +
                            std::to_string(job.max_restarts) + ": " + std::to_string(world) +
                            " rank(s) again, resuming from their checkpoints";
    spdlog::warn("{}", why);
    if (options.on_restart) options.on_restart(restarts + 1, why);
  }
}

}  // namespace partita

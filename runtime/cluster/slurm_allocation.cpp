#include "runtime/cluster/slurm_allocation.h"

#include <cctype>
#include <cstdlib>
#include <set>

#include "base/error.h"

extern char** environ;

namespace partita::runtime {

namespace {

[[noreturn]] void bad_list(const std::string& list, const std::string& why) {
  throw Error("Slurm host list '" + list + "': " + why);
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The values of one bracket's text ("01-03,7"), each as written (width kept).
std::vector<std::string> expand_ranges(const std::string& list, const std::string& ranges) {
  std::vector<std::string> values;
  size_t start = 0;
  for (;;) {
    const size_t comma = ranges.find(',', start);
    const std::string range = ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (range.empty()) bad_list(list, "an empty range in [" + ranges + "]");
    const size_t dash = range.find('-');
    const std::string lo = range.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9) {
      bad_list(list, "'" + range + "' in [" + ranges + "] is not a number or a range of numbers N-M");
    }
    const long a = std::stol(lo), b = std::stol(hi);
    if (b < a) bad_list(list, "the range '" + range + "' ends below its start");
    if (static_cast<size_t>(b - a) >= kMaxSlurmHosts) {
      bad_list(list, "the range '" + range + "' has more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    }
    for (long v = a; v <= b; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
      values.push_back(digits);
    }
    if (values.size() > kMaxSlurmHosts) bad_list(list, "more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

// One entry of the list (no top-level comma): its names, brackets multiplied out.
void expand_entry(const std::string& list, const std::string& entry, std::vector<std::string>& hosts) {
  std::vector<std::string> names{""};
  size_t i = 0;
  while (i < entry.size()) {
    const size_t open = entry.find('[', i);
    const std::string literal = entry.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (literal.find(']') != std::string::npos) bad_list(list, "a ']' without its '[' in '" + entry + "'");
    for (auto& n : names) n += literal;
    if (open == std::string::npos) break;
    const size_t close = entry.find(']', open);
    if (close == std::string::npos) bad_list(list, "a '[' without its ']' in '" + entry + "'");
    const std::string inside = entry.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string::npos) bad_list(list, "brackets inside brackets in '" + entry + "'");
    const std::vector<std::string> values = expand_ranges(list, inside);
    if (names.size() * values.size() + hosts.size() > kMaxSlurmHosts) {
      bad_list(list, "more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    }
    std::vector<std::string> next;
    for (const auto& n : names) {
      for (const auto& v : values) next.push_back(n + v);
    }
    names = std::move(next);
    i = close + 1;
  }
  for (auto& n : names) {
    if (n.empty()) bad_list(list, "an empty host name");
    for (char c : n) {
      if (std::isspace(static_cast<unsigned char>(c))) bad_list(list, "white space in the host name '" + n + "'");
    }
    hosts.push_back(std::move(n));
  }
}

// The first of `names` that `env` has, or "" (and `which` = "").
std::string first_of(const std::map<std::string, std::string>& env, std::initializer_list<const char*> names,
                     std::string& which) {
  for (const char* name : names) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) {
      which = name;
      return it->second;
    }
  }
  which.clear();
  return "";
}

int positive_count(const std::string& variable, const std::string& value, int minimum) {
  if (!all_digits(value) || value.size() > 9 || std::stoi(value) < minimum) {
    throw Error("Slurm variable " + variable + "='" + value + "' is not a number of at least " +
                std::to_string(minimum));
  }
  return std::stoi(value);
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(const std::string& list) {
  if (list.empty()) bad_list(list, "empty");
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) bad_list(list, "a ']' without its '['");
    if (c == ',' && depth == 0) {
      const std::string entry = list.substr(start, i - start);
      if (entry.empty()) bad_list(list, "an empty entry (two commas, or one at an end)");
      expand_entry(list, entry, hosts);
      start = i + 1;
    }
  }
  if (depth != 0) bad_list(list, "a '[' without its ']'");
  return hosts;
}

SlurmAllocation parse_slurm_allocation(const std::map<std::string, std::string>& env) {
  std::string job_var, proc_var, tasks_var, nodes_var, list_var, unused;
  const std::string job = first_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"}, job_var);
  const std::string proc = first_of(env, {"SLURM_PROCID"}, proc_var);
  const std::string tasks = first_of(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, tasks_var);
  const std::string nodes = first_of(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"}, nodes_var);
  const std::string list = first_of(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, list_var);
  std::string missing;
  const auto need = [&missing](const std::string& value, const char* names) {
    if (value.empty()) missing += (missing.empty() ? "" : ", ") + std::string(names);
  };
  need(job, "SLURM_JOB_ID");
  need(proc, "SLURM_PROCID");
  need(tasks, "SLURM_NTASKS (or SLURM_STEP_NUM_TASKS)");
  need(nodes, "SLURM_NNODES (or SLURM_STEP_NUM_NODES)");
  need(list, "SLURM_JOB_NODELIST (or SLURM_STEP_NODELIST, SLURM_NODELIST)");
  if (!missing.empty()) {
    throw Error("not in a Slurm job step: no " + missing +
                " in the environment (run partita start --slurm under srun, in an allocation)");
  }
  SlurmAllocation a;
  if (!all_digits(job) || job.size() > 18) throw Error("Slurm variable " + job_var + "='" + job + "' is not a job id");
  a.job_id = job;
  a.tasks = positive_count(tasks_var, tasks, 1);
  a.nodes = positive_count(nodes_var, nodes, 1);
  a.proc_id = positive_count(proc_var, proc, 0);
  if (a.proc_id >= a.tasks) {
    throw Error("Slurm variable " + proc_var + "=" + proc + " is not below " + tasks_var + "=" + tasks);
  }
  a.hosts = expand_slurm_hostlist(list);
  if (std::set<std::string>(a.hosts.begin(), a.hosts.end()).size() != a.hosts.size()) {
    throw Error("Slurm variable " + list_var + "='" + list + "' names a host twice");
  }
  if (a.hosts.size() != static_cast<size_t>(a.nodes)) {
    throw Error("Slurm variable " + list_var + "='" + list + "' has " + std::to_string(a.hosts.size()) +
                " host(s), " + nodes_var + " says " + nodes);
  }
  if (a.tasks < a.nodes) {
    throw Error("Slurm variables " + tasks_var + "=" + tasks + " and " + nodes_var + "=" + nodes +
                ": fewer tasks than nodes");
  }
  if (auto it = env.find("SLURMD_NODENAME"); it != env.end()) a.this_node = it->second;
  if (auto it = env.find("SLURM_SUBMIT_DIR"); it != env.end()) a.submit_dir = it->second;
  return a;
}

std::map<std::string, std::string> slurm_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("SLURM", 0) != 0) continue;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

uint16_t slurm_head_port(const std::string& job_id) {
  if (!all_digits(job_id) || job_id.size() > 18) throw Error("Slurm job id '" + job_id + "' is not a number");
  return static_cast<uint16_t>(kSlurmPortBase + std::stoull(job_id) % kSlurmPortSpan);
}

}  // namespace partita::runtime

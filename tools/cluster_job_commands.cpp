// Jobs on a cluster's head: `partita submit JOB --address HEAD` (submit, then follow the
// job's log until it ends; Ctrl-C detaches), `partita logs JOB [--follow] --address HEAD`,
// and `partita job-driver`, the hidden command the head runs as a job's driver process
// (training/cluster_job.h does the work; this wires it to the head).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <caf/all.hpp>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "actors/protocol.h"
#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "tools/commands.h"
#include "tools/head_address.h"
#include "training/cluster_job.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/python_job.h"
#include "base/file_util.h"

namespace partita::cli {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kHeadTimeout{10000};
constexpr milliseconds kFollowPoll{300};
// Step reports to the head at most this often (epoch ends and state changes always).
constexpr milliseconds kReportEvery{250};
// How long the report of a job's end waits for the head: one that does not answer in this
// time is taken as gone (a live head answers at once).
constexpr milliseconds kEndReportTimeout{3000};
// The driver asks the head how it is this often; an answer that takes longer than
// kHeadSilence is logged as the head's silence (see HeadWatch).
constexpr milliseconds kHeadWatchEvery{500};
constexpr milliseconds kHeadSilence{1000};

// Ctrl-C while following a job's log: detach (the job goes on). The handler only sets a flag.
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

struct InterruptFlag {
  struct sigaction previous {};
  InterruptFlag() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous);
  }
  ~InterruptFlag() { sigaction(SIGINT, &previous, nullptr); }
};

// Prints the job's log from `offset` to stdout; with `follow`, until the job ends (its
// state then) or Ctrl-C ("" then).
std::string print_logs(caf::actor_system& system, const runtime::head_actor& head, const std::string& where,
                       const std::string& id, bool follow, int64_t from = 0) {
  InterruptFlag flag;
  int64_t offset = from;
  for (;;) {
    runtime::JobLogChunk chunk = runtime::job_logs(system, head, where, id, offset, kHeadTimeout);
    std::cout << chunk.bytes << std::flush;
    offset = chunk.next_offset;
    const bool ended = runtime::JobStatus::finished_state(chunk.state);
    if (!chunk.bytes.empty() && static_cast<int64_t>(chunk.bytes.size()) == runtime::kMaxLogChunkBytes) continue;
    if (!follow || ended) return chunk.state;
    for (auto waited = milliseconds(0); waited < kFollowPoll; waited += milliseconds(50)) {
      if (g_interrupted.load()) return "";
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
}

runtime::JobStatus job_status(caf::actor_system& system, const runtime::head_actor& head, const std::string& where,
                              const std::string& id) {
  const runtime::ClusterStatus status = runtime::cluster_status(system, head, where, kHeadTimeout);
  for (const auto& job : status.jobs) {
    if (job.id == id) return job;
  }
  throw Error("head " + where + ": no job '" + id + "'");
}

// The end of a followed job: exit 0 when done; otherwise an Error with the head's message.
void finish(caf::actor_system& system, const runtime::head_actor& head, const std::string& where, const std::string& id,
            const std::string& state) {
  if (state.empty()) {
    std::cout << "detached from job " << id << " (it goes on): partita job logs " << id << " --follow --address "
              << where << std::endl;
    return;
  }
  const runtime::JobStatus job = job_status(system, head, where, id);
  if (job.state == "done") {
    std::cout << "job " << id << " done; results in " << job.output << " on the head's machine" << std::endl;
    return;
  }
  throw Error("job " + id + " " + job.state + (job.message.empty() ? "" : ": " + job.message));
}

// " --address WHERE" when the address was given on the command line; "" when later
// commands find the head the same way without it.
std::string address_flag(const std::string& flag, const std::string& where) {
  return flag.empty() ? "" : " --address " + where;
}

// The newest job named `name` (its id NAME-N) that is cancelled or failed: what `submit
// --resume` continues. Throws Error naming what the head has instead.
std::string latest_stopped_job(caf::actor_system& system, const runtime::head_actor& head, const std::string& where,
                               const std::string& name) {
  std::string found, other;
  for (const auto& job : runtime::cluster_status(system, head, where, kHeadTimeout).jobs) {
    if (!job.submitted || job.id.rfind(name + "-", 0) != 0) continue;
    const std::string n = job.id.substr(name.size() + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
    if (job.state == "cancelled" || job.state == "failed") {
      found = job.id;  // the status lists jobs in submission order: the last is the newest
    } else {
      other = job.id + " (" + job.state + ")";
    }
  }
  if (found.empty()) {
    throw Error("head " + where + ": no cancelled or failed job of " + name + " to resume" +
                (other.empty() ? "" : "; its latest is " + other) + " (partita job resume ID names one)");
  }
  return found;
}

std::string resume_on_head(caf::actor_system& system, const runtime::head_actor& head, const std::string& where,
                           const std::string& id) {
  const std::string resumed = runtime::resume_job(system, head, where, id, kHeadTimeout);
  std::cout << "job " << resumed << " resumed on " << where << " from its last checkpoint" << std::endl;
  return resumed;
}

// How many bytes the job's log holds now.
int64_t current_log_size(caf::actor_system& system, const runtime::head_actor& head, const std::string& where,
                         const std::string& id) {
  int64_t offset = 0;
  for (;;) {
    const runtime::JobLogChunk chunk = runtime::job_logs(system, head, where, id, offset, kHeadTimeout);
    if (chunk.bytes.empty()) return offset;
    offset = chunk.next_offset;
  }
}

// A command's client connection to the head: credentials installed, the head reached within
// kHeadTimeout or an Error naming it.
struct HeadConnection {
  HeadConnection(const std::string& address, const GlobalOptions& global)
      : endpoint(runtime::parse_endpoint(head_address(address), "--address")),
        client((install_credentials(global), head_client_options())),  // credentials before the system starts
        system(client.get()),
        head(runtime::connect_head(system, endpoint, kHeadTimeout)),
        where(endpoint.to_string()) {}

  runtime::Endpoint endpoint;
  runtime::ActorSystem client;
  caf::actor_system& system;
  runtime::head_actor head;
  std::string where;
};

// After a submit or resume: says how to follow job `id` when `detach`, else follows its log
// from byte `from` to its end (finish).
void follow_or_detach(HeadConnection& c, const std::string& address, const std::string& id, bool detach, int64_t from) {
  if (detach) {
    std::cout << "follow it with: partita job logs " << id << " --follow" << address_flag(address, c.where) << std::endl;
    return;
  }
  finish(c.system, c.head, c.where, id, print_logs(c.system, c.head, c.where, id, true, from));
}

// The driver process's link to the head: its progress as a JobStatus, sent to the head
// with the token the head gave this driver.
class HeadReporter {
 public:
  HeadReporter(caf::actor_system& system, runtime::head_actor head, std::string where, std::string id,
               std::string token)
      : system_(system), head_(std::move(head)), where_(std::move(where)), id_(std::move(id)), token_(std::move(token)) {}

  // Updates the status under the lock and sends it: at once (`now` or a new state, waiting
  // for the head's answer), or if the last send is kReportEvery old or the steps it holds
  // (JobStatus::new_steps, which `change` appends to) reach kMaxStepsPerReport (without
  // waiting). Each report carries the steps since the previous one; they go over the
  // head's connection in order, so only a lost connection loses any.
  // Returns false when a report sent at once was not taken (the head is gone, or did not
  // answer within `timeout`).
  template <typename Update>
  bool update(Update&& change, bool now, std::chrono::milliseconds timeout = kHeadTimeout) {
    runtime::JobStatus copy;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const std::string before = status_.state;
      change(status_);
      now = now || status_.state != before;  // a state change goes at once
      const auto t = std::chrono::steady_clock::now();
      const bool full = status_.new_steps.size() >= runtime::kMaxStepsPerReport;
      if (!now && !full && t - last_ < kReportEvery) return true;
      last_ = t;
      copy = status_;
      status_.new_steps.clear();
    }
    if (!now) {
      caf::anon_send(head_, runtime::job_report_atom::value, id_, token_, copy);
      return true;
    }
    try {
      return runtime::report_job(system_, head_, where_, id_, token_, copy, timeout);
    } catch (const Error& e) {
      spdlog::warn("cannot report to the head: {}", e.what());
      return false;
    }
  }

 private:
  caf::actor_system& system_;
  runtime::head_actor head_;
  std::string where_, id_, token_;
  std::mutex mutex_;
  runtime::JobStatus status_;
  std::chrono::steady_clock::time_point last_{};
};

// Whether the head answers, told in the job's log. A job does not need its head while it
// trains (its actors talk to each other), so a head that is frozen (SIGSTOP) or starved for
// less than the connection heartbeat timeout is survived; but its silence is a fault the
// log should name: a thread asks the head for its status every kHeadWatchEvery, and when
// no answer came within kHeadSilence it logs "the head at H has not answered for 1.0 s",
// then, at its next answer, "the head at H answers again after S s". A lost head (its
// connection dropped) ends the watch: the driver's monitor handles that.
class HeadWatch {
 public:
  HeadWatch(caf::actor_system& system, runtime::head_actor head, std::string where)
      : system_(system), head_(std::move(head)), where_(std::move(where)), thread_([this] { run(); }) {}
  // Stops the watch: at once between requests, else after the one in flight (kHeadSilence).
  ~HeadWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  HeadWatch(const HeadWatch&) = delete;
  HeadWatch& operator=(const HeadWatch&) = delete;

 private:
  using Clock = std::chrono::steady_clock;

  void run() {
    bool silent = false;
    Clock::time_point silent_since{};  // silent: when the first unanswered request went
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_for(lock, kHeadWatchEvery, [this] { return stop_; })) return;
      }
      const auto asked = Clock::now();
      try {
        runtime::cluster_status(system_, head_, where_, kHeadSilence);
      } catch (const Error& e) {
        if (std::string(e.what()).find("was lost") != std::string::npos) return;
        if (!silent) {
          silent = true;
          silent_since = asked;
          spdlog::warn("the head at {} has not answered for {:.1f} s", where_,
                       std::chrono::duration<double>(Clock::now() - asked).count());
        }
        continue;
      }
      if (silent) {
        spdlog::info("the head at {} answers again after {:.1f} s", where_,
                     std::chrono::duration<double>(Clock::now() - silent_since).count());
        silent = false;
      }
    }
  }

  caf::actor_system& system_;
  runtime::head_actor head_;
  std::string where_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is set
};

// SIGTERM (the head cancelling the job, or the head's process gone: PR_SET_PDEATHSIG) or
// SIGINT: cancel. The token is static, so the handler, installed for the rest of the
// process's life, never reaches freed memory; CancelToken::cancel is one lock-free atomic
// store, safe in a handler. One driver per process.
CancelToken g_cancel;
extern "C" void on_cancel_signal(int) { g_cancel.cancel(); }

struct DriverArgs {
  std::string head, id, job_file, output, token;
  pid_t head_pid = 0;
  bool resume = false;  // continue from the output folder's last checkpoint
};

// What both kinds of driver need first: the cancel signals, death with the head's process,
// and the head's connection (credentials, watcher of the head's loss, reporter, head watch).
void install_cancel_signals(const DriverArgs& args) {
  // First of all, so that a cancel as early as the head can send one is one.
  struct sigaction action {};
  action.sa_handler = on_cancel_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  // Die with the head's process, even when it is killed (then nobody else would stop this
  // job). It may have died before this call: then the parent is another process already.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != args.head_pid) g_cancel.cancel();
}

class DriverLink {
 public:
  DriverLink(const DriverArgs& args, const GlobalOptions& global)
      : endpoint_((install_credentials(global), runtime::parse_endpoint(args.head, "--head"))),  // the head's credentials
        where(endpoint_.to_string()),
        client_(head_client_options()),
        system(client_.get()),
        head(runtime::connect_head(system, endpoint_, kHeadTimeout)),
        head_lost(std::make_shared<std::atomic<bool>>(false)),
        cancel(&g_cancel, [](CancelToken*) {}),  // static: never deleted
        reporter(system, head, where, args.id, args.token),
        head_watch_(system, head, where),
        head_pid_(args.head_pid) {
    // A lost head: the job fails (cleanly: cancelled at its next step, its actors stopped).
    watcher_ = system.spawn([h = head, c = cancel, lost = head_lost](caf::event_based_actor* self) -> caf::behavior {
      self->monitor(h);
      self->set_down_handler([c, lost](caf::down_msg&) {
        lost->store(true);
        c->cancel();
      });
      return {[](caf::ok_atom) {}};
    });
  }
  ~DriverLink() { caf::anon_send_exit(watcher_, caf::exit_reason::user_shutdown); }

  bool head_gone() const { return head_lost->load() || ::getppid() != head_pid_; }
  // The job's end, told to the head; false when the head did not take it (gone).
  bool end(const std::string& state, const std::string& message) {
    return reporter.update(
        [&](runtime::JobStatus& s) {
          s.state = state;
          s.message = message;
        },
        true, kEndReportTimeout);
  }
  std::vector<NodeOffer> live_nodes() {
    std::vector<NodeOffer> offers;
    for (const runtime::NodeStatus& n : runtime::cluster_status(system, head, where, kHeadTimeout).nodes) {
      if (n.alive) offers.push_back(
            {n.info.name, n.info.address, n.member, n.load.memory_available_bytes, n.info.cores, n.load.cached_units});
    }
    return offers;
  }
  std::string host() const { return endpoint_.host; }

 private:
  runtime::Endpoint endpoint_;

 public:
  const std::string where;

 private:
  runtime::ActorSystem client_;

 public:
  caf::actor_system& system;
  const runtime::head_actor head;
  const std::shared_ptr<std::atomic<bool>> head_lost;
  const std::shared_ptr<CancelToken> cancel;
  HeadReporter reporter;

 private:
  const HeadWatch head_watch_;
  pid_t head_pid_;
  caf::actor watcher_;
};

// A Python job's driver (training/python_job.h): the ranks' output goes to the job's log,
// one line each, "[rank R] ...".
void drive_python(const DriverArgs& args, const GlobalOptions& global, const std::string& text) {
  install_cancel_signals(args);
  const PythonJob job = python_job_from_json(text);
  const std::string output = fs::absolute(args.output).lexically_normal().string();
  DriverLink link(args, global);
  const std::string& id = args.id;
  link.reporter.update([](runtime::JobStatus& s) { s.state = "starting"; }, true);
  spdlog::info("job {}: driver (pid {}) of the Python job {} in {} (head {}), output {}", id, ::getpid(),
               job.command.size() > 2 && job.command[1] == "-m" ? "-m " + job.command[2]
               : job.command.size() > 1                         ? job.command[1]
                                                                : "",
               job.workdir, link.where, output);
  PythonJobOptions options;
  options.id = id;
  options.head = link.where;
  options.checkpoint_dir = output + "/checkpoints";
  options.system.threads = global.threads;
  options.staging_host = link.host();
  options.cancel = link.cancel;
  options.live_nodes = [&] { return link.live_nodes(); };
  std::mutex out_mutex;
  options.on_output = [&](int rank, const std::string& lines) {
    std::lock_guard<std::mutex> lock(out_mutex);
    const std::string prefix = "[rank " + std::to_string(rank) + "] ";
    for (size_t start = 0; start < lines.size();) {
      const size_t end = std::min(lines.find('\n', start), lines.size());
      std::cout << prefix << lines.substr(start, end - start) << '\n';
      start = end + 1;
    }
    std::cout << std::flush;
  };
  options.on_owner = [&](const std::string& owner) { link.reporter.update([&](runtime::JobStatus& s) { s.owner = owner; }, true); };
  options.on_started = [&](const std::vector<std::string>& nodes, const std::vector<int64_t>& pids) {
    std::string where;
    for (size_t r = 0; r < nodes.size(); ++r) {
      where += (r ? ", " : "") + std::to_string(r) + " on " + nodes[r] + " (pid " +
               (r < pids.size() ? std::to_string(pids[r]) : "-") + ")";
    }
    spdlog::info("job {}: ranks {}", id, where);
    link.reporter.update(
        [&](runtime::JobStatus& s) {
          s.state = "running";
          s.message = std::to_string(nodes.size()) + " rank(s): " + where;
        },
        true);
  };
  options.on_restart = [&](int restarts, const std::string& why) {
    link.reporter.update(
        [&](runtime::JobStatus& s) {
          s.state = "recovering";
          s.restarts = restarts;
          s.message = why;
        },
        true);
  };
  try {
    run_python_job(job, options);
    spdlog::info("job {}: every rank exited with status 0", id);
    link.end("done", "");
  } catch (const JobCancelled& e) {
    if (link.head_gone() || !link.end("cancelled", e.what())) {
      throw Error("the head at " + link.where + " was lost; the job stops (its checkpoints are in " +
                  options.checkpoint_dir + ")");
    }
    spdlog::info("job {}: {}", id, e.what());
  } catch (const std::exception& e) {
    if (!link.head_gone()) link.end("failed", e.what());
    throw;
  }
}

void drive(const DriverArgs& args, const GlobalOptions& global) {
  if (const std::string text = read_file(args.job_file); is_python_job(text)) return drive_python(args, global, text);
  install_cancel_signals(args);
  const std::shared_ptr<CancelToken> cancel(&g_cancel, [](CancelToken*) {});  // static: never deleted
  const auto check_cancel = [&](const char* during) {
    if (cancel->cancelled()) throw JobCancelled(std::string("job cancelled ") + during, 0, 0, 0);
  };

  JobConfig job = load_job(args.job_file);
  job.output = fs::absolute(args.output).lexically_normal().string();
  const std::string& id = args.id;
  DriverLink link(args, global);
  const std::string& where = link.where;
  HeadReporter& reporter = link.reporter;
  reporter.update([](runtime::JobStatus& s) { s.state = "starting"; }, true);
  spdlog::info("job {}: driver (pid {}) of {} (head {}), output {}", id, ::getpid(), args.job_file, where, job.output);

  ClusterJobOptions options;
  options.system.threads = global.threads;
  // The nodes reach this machine where they reach the head: the driver serves them the job's data there.
  options.staging_host = link.host();
  add_protocol_types(options.system);
  // The head gave this job a fresh folder, or resumes it there.
  options.run.overwrite = !args.resume;
  options.run.resume = args.resume;
  options.run.threads = global.threads;
  options.run.cancel = cancel;
  options.run.on_owner = [&](const std::string& owner) { reporter.update([&](runtime::JobStatus& s) { s.owner = owner; }, true); };
  options.run.on_progress = [&](const JobProgress& p) {
    const bool epoch_end = p.event == JobProgress::Event::epoch;
    reporter.update(
        [&](runtime::JobStatus& s) {
          s.state = "running";
          s.message.clear();
          s.epoch = p.epoch;
          s.epochs = p.epochs;
          s.step = p.step;
          s.steps = p.steps;
          s.steps_per_second = p.steps_per_second;
          s.loss = p.loss;
          s.accuracy = p.accuracy;
          if (!epoch_end) s.new_steps.push_back({p.epoch, p.step, p.steps, p.loss, p.accuracy, p.seconds});
        },
        epoch_end);
    // The job's driver logs each epoch's line itself (training/job_driver.h): one line an epoch.
  };
  options.live_nodes = [&] { return link.live_nodes(); };
  options.on_placed = [&](const std::vector<std::string>& partitions, const std::vector<int64_t>& bytes) {
    std::string text;
    for (size_t p = 0; p < partitions.size(); ++p) text += (p ? ", " : "") + std::to_string(p) + " on " + partitions[p];
    spdlog::info("job {}: partitions {}", id, text);
    reporter.update(
        [&](runtime::JobStatus& s) {
          s.partitions = partitions;
          s.partition_bytes = bytes;
        },
        true);
  };
  options.on_restart = [&](int restarts, const std::string& why) {
    reporter.update(
        [&](runtime::JobStatus& s) {
          s.state = "recovering";
          s.restarts = restarts;
          s.message = why;
        },
        true);
  };
  const auto head_gone = [&] {
    return "the head at " + where + " was lost; the job stops (its last checkpoint is in " + job.output + ")";
  };
  try {
    check_cancel("before it started");
    prepare_data(job, global.threads);
    check_cancel("while its data was prepared");
    JobReport report = run_cluster_job(job, options);
    if (!report.epochs.empty()) {
      const EpochMetrics& last = report.epochs.back();
      spdlog::info("job {}: epoch {}: train loss {:.4f}, val accuracy {:.4f}, test accuracy {:.4f}; parameter hash {}", id,
                   last.epoch, last.train_loss, last.val_accuracy, last.test_accuracy, report.parameter_hash);
    }
    link.end("done", "");
  } catch (const JobCancelled& e) {
    // A cancel from the head, or the head's process dying (its SIGTERM may come while the
    // head's threads are still going down, so the parent pid has not changed yet): the
    // head that takes the end asked for it.
    if (link.head_gone() || !link.end("cancelled", e.what())) throw Error(head_gone());
    spdlog::info("job {}: {}", id, e.what());  // asked for: no error
    return;
  } catch (const std::exception& e) {
    if (!link.head_gone()) link.end("failed", e.what());
    throw;
  }
}

}  // namespace

void submit_to_head(const std::string& address, const std::string& job_file, const std::string& output, bool detach,
                    bool resume, const GlobalOptions& global) {
  JobConfig job = load_job(job_file);  // checked here, with the user's paths resolved
  if (!output.empty()) throw UsageError("--output with --address: a submitted job's output goes to the head's runs folder");
  HeadConnection c(address, global);
  const std::string name = fs::path(job_file).stem().string();
  std::string id;
  int64_t from = 0;  // a resumed job's log from the resume on (the earlier lines: job logs)
  if (resume) {
    const std::string stopped = latest_stopped_job(c.system, c.head, c.where, name);
    from = current_log_size(c.system, c.head, c.where, stopped);
    id = resume_on_head(c.system, c.head, c.where, stopped);
  } else {
    id = runtime::submit_job(c.system, c.head, c.where, name, submitted_job_yaml(job_file, job), kHeadTimeout);
    std::cout << "job " << id << " submitted to " << c.where << std::endl;
  }
  follow_or_detach(c, address, id, detach, from);
}

void submit_python_to_head(const std::string& address, const PythonJob& given, bool detach, const GlobalOptions& global) {
  const PythonJob job = checked_python_job(given);
  HeadConnection c(address, global);
  if (job.ranks > 0) {
    int64_t live = 0;
    for (const auto& n : runtime::cluster_status(c.system, c.head, c.where, kHeadTimeout).nodes) live += n.alive ? 1 : 0;
    if (job.ranks > live * job.slots_per_node) {
      throw UsageError("world size " + std::to_string(job.ranks) + " (--ranks) is larger than the cluster's " +
                       std::to_string(live * job.slots_per_node) + " trainer slot(s): " + std::to_string(live) +
                       " live node(s), " + std::to_string(job.slots_per_node) + " slot(s) each (--slots-per-node)");
    }
  }
  // The job's name: the script's ("train" for train.py) or the module's ("pkg.train").
  const std::string name = job.command[1] == "-m" ? job.command[2] : fs::path(job.command[1]).stem().string();
  const std::string id = runtime::submit_job(c.system, c.head, c.where, name, python_job_json(job), kHeadTimeout);
  std::cout << "job " << id << " submitted to " << c.where << std::endl;
  follow_or_detach(c, address, id, detach, 0);
}

void resume_job_on_head(const std::string& address, const std::string& id, bool detach, const GlobalOptions& global) {
  HeadConnection c(address, global);
  // The log from the resume on: the earlier attempts' lines are in `partita job logs`.
  int64_t from = 0;
  try {
    from = current_log_size(c.system, c.head, c.where, id);
  } catch (const Error&) {
    // A job only the runs folder knows (an earlier head's): its log from the start.
  }
  resume_on_head(c.system, c.head, c.where, id);
  follow_or_detach(c, address, id, detach, from);
}

void print_job_logs(const std::string& address, const std::string& id, bool follow, const GlobalOptions& global) {
  HeadConnection c(address, global);
  const std::string state = print_logs(c.system, c.head, c.where, id, follow);
  if (follow) finish(c.system, c.head, c.where, id, state);
}

void add_logs_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string job;
    std::string address;
    bool follow = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("logs", "print a job's log (jobs submitted to a head; partita job logs)");
  cmd->add_option("job", o->job, "the job's id (partita job list lists them)")->required();
  cmd->add_option("--address", o->address, kHeadAddressHelp);
  cmd->add_flag("-f,--follow", o->follow, "keep printing until the job ends (Ctrl-C detaches)");
  cmd->callback([o, &global] { print_job_logs(o->address, o->job, o->follow, global); });
}

void add_job_driver_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<DriverArgs>();
  // Not for users (the head runs it): out of --help by an empty group.
  CLI::App* cmd = app.add_subcommand("job-driver", "")->group("");
  cmd->add_option("--head", o->head, "HOST:PORT of the head")->required();
  cmd->add_option("--head-pid", o->head_pid, "the head's process id (this driver's parent)")->required();
  cmd->add_option("--job", o->id, "the job's id")->required();
  cmd->add_option("--token", o->token, "the token of the job's reports")->required();
  cmd->add_option("--output", o->output, "the job's output folder")->required();
  cmd->add_flag("--resume", o->resume, "continue from the output folder's last checkpoint");
  cmd->add_option("job_file", o->job_file, "the submitted job")->required();
  cmd->callback([o, &global] { drive(*o, global); });
}

}  // namespace partita::cli

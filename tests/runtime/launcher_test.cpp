// A Python job's node side: LaunchedProcess (output by lines, exit status, stderr's tail, a
// stop that takes the whole process group) and the launcher actor, whose launch request
// comes from the network and is checked field by field before anything runs.
#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/errors.h"
#include "runtime/host.h"
#include "runtime/launcher/launched_process.h"
#include "runtime/launcher/launcher.h"

extern char** environ;

namespace partita::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr auto kTimeout = std::chrono::seconds(30);

struct Captured {
  std::mutex mutex;
  std::string out;
  int code = -1000;
  std::string tail;
};

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.program = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.cwd = "/";
  for (char** e = environ; *e != nullptr; ++e) spec.env.emplace_back(*e);
  return spec;
}

std::unique_ptr<LaunchedProcess> start(const std::string& script, Captured& c) {
  return std::make_unique<LaunchedProcess>(
      shell(script),
      [&c](const std::string& lines) {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.out += lines;
      },
      [&c](int code, const std::string& tail) {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.code = code;
        c.tail = tail;
      });
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

void wait_exited(LaunchedProcess& p) {
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  while (!p.exited() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(p.exited());
}

TEST(LaunchedProcessTest, GivesItsOutputByLinesItsStatusAndTheTailOfItsStderr) {
  Captured c;
  auto p = start("echo one; echo two >&2; printf 'no newline'; exit 3", c);
  wait_exited(*p);
  EXPECT_EQ(c.code, 3);
  EXPECT_NE(c.out.find("one\n"), std::string::npos);
  EXPECT_NE(c.out.find("two\n"), std::string::npos);
  EXPECT_NE(c.out.find("no newline\n"), std::string::npos);
  EXPECT_EQ(c.tail, "two\n");
}

TEST(LaunchedProcessTest, CutsLongLinesAndKeepsABoundedTail) {
  Captured c;
  auto p = start("head -c 40000 /dev/zero | tr '\\0' x; echo; for i in $(seq 1 100); do echo line$i >&2; done", c);
  wait_exited(*p);
  EXPECT_EQ(c.code, 0);
  EXPECT_EQ(c.out.find('\n'), LaunchedProcess::kMaxLineBytes);
  EXPECT_EQ(c.tail.rfind("line81\n", 0), 0u) << c.tail;  // the last 20 lines
}

TEST(LaunchedProcessTest, StopEndsTheWholeProcessGroup) {
  Captured c;
  auto p = start("sleep 300 & echo $!; trap '' TERM; sleep 300", c);
  pid_t child = 0;
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  while (child == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.out.empty()) child = static_cast<pid_t>(std::stol(c.out));
  }
  ASSERT_GT(child, 0);
  ASSERT_TRUE(alive(p->pid()));
  p->stop(std::chrono::milliseconds(300));  // the shell ignores SIGTERM: SIGKILL then
  EXPECT_TRUE(p->exited());
  EXPECT_EQ(c.code, 128 + SIGKILL);
  EXPECT_FALSE(alive(p->pid()));
  const auto gone = std::chrono::steady_clock::now() + kTimeout;
  while (alive(child) && std::chrono::steady_clock::now() < gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(child)) << "the shell's own child outlived the stop";
}

TEST(LaunchedProcessTest, AProgramThatCannotRunIsAnErrorNamingIt) {
  ProcessSpec spec = shell("");
  spec.program = "/nonexistent/python3";
  try {
    LaunchedProcess p(spec, [](const std::string&) {}, [](int, const std::string&) {});
    FAIL() << "started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run /nonexistent/python3"), std::string::npos) << e.what();
  }
}

// A daemon's launcher in this process, with a cache holding one staged folder.
class LauncherTest : public ::testing::Test {
 protected:
  LauncherTest() {
    root_ = fs::temp_directory_path() / ("partita-launcher-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    staged_ = root_ / "cache" / "folders" / "0123456789abcdef";
    fs::create_directories(staged_);
    std::ofstream(staged_ / "train.py") << "import os, sys\nprint('rank', os.environ['PARTITA_RANK'], sys.argv[1:])\n"
                                        << "print('tls', os.environ.get('PARTITA_TLS_DIR'))\nsys.exit(4)\n";
    std::ofstream(root_ / "outside.py") << "print('outside')\n";
    ActorSystemOptions options;
    options.threads = 2;
    system_ = std::make_unique<ActorSystem>(options);
    ActorTypeRegistry registry;
    add_launcher_type(registry, {(root_ / "cache").string(), "/etc/node-credentials"});
    host_ = spawn_host(system_->get(), {"node", "test"}, std::move(registry));
  }
  ~LauncherTest() override {
    caf::anon_send(host_, shutdown_atom::value);
    system_.reset();
    fs::remove_all(root_);
  }

  json request() const {
    return {{"index", 1},
            {"argv", {"python3", "train.py", "--epochs", "2"}},
            {"cwd", staged_.string()},
            {"env", {{"PARTITA_RANK", "1"}}}};
  }

  // The launch's pid, or the error's text.
  std::string launch(const json& req, caf::scoped_actor& sink) {
    caf::actor launcher;
    sink->request(host_, kTimeout, spawn_atom::value, std::string(kLauncherType), Settings{}, caf::actor{})
        .receive([&](caf::actor& a) { launcher = a; }, [&](caf::error& e) { ADD_FAILURE() << describe(system_->get(), e); });
    std::string result;
    sink->request(launcher, kTimeout, launch_atom::value, req.dump(), caf::actor_cast<caf::actor>(sink))
        .receive([&](int64_t pid) { result = "pid " + std::to_string(pid); },
                 [&](caf::error& e) { result = describe(system_->get(), e); });
    return result;
  }

  fs::path root_, staged_;
  std::unique_ptr<ActorSystem> system_;
  host_actor host_;
};

TEST_F(LauncherTest, RunsTheScriptInTheStagedFolderAndStreamsItsOutputAndEnd) {
  caf::scoped_actor sink{system_->get()};
  const std::string launched = launch(request(), sink);
  ASSERT_EQ(launched.rfind("pid ", 0), 0u) << launched;
  std::string out;
  int32_t code = -1;
  bool ended = false;
  while (!ended) {
    bool timed_out = false;
    sink->receive(
        [&](launch_output_atom, int32_t index, const std::string& lines) {
          EXPECT_EQ(index, 1);
          out += lines;
          return true;
        },
        [&](launch_exit_atom, int32_t index, int32_t status, const std::string&) {
          EXPECT_EQ(index, 1);
          code = status;
          ended = true;
          return true;
        },
        caf::after(kTimeout) >> [&] { timed_out = true; });
    ASSERT_FALSE(timed_out) << out;
  }
  EXPECT_EQ(code, 4);
  EXPECT_NE(out.find("rank 1 ['--epochs', '2']"), std::string::npos) << out;
  EXPECT_NE(out.find("tls /etc/node-credentials"), std::string::npos) << out;
}

TEST_F(LauncherTest, RunsAModuleOfTheStagedFolderWithDashM) {
  fs::create_directories(staged_ / "pkg");
  std::ofstream(staged_ / "pkg" / "job.py") << "import sys\nprint('module', __name__, sys.argv[1:])\n";
  caf::scoped_actor sink{system_->get()};
  json req = request();
  req["argv"] = json::array({"python3", "-m", "pkg.job", "--epochs", "2"});
  const std::string launched = launch(req, sink);
  ASSERT_EQ(launched.rfind("pid ", 0), 0u) << launched;
  std::string out;
  int32_t code = -1;
  for (bool ended = false, timed_out = false; !ended;) {
    sink->receive([&](launch_output_atom, int32_t, const std::string& lines) { out += lines; return true; },
                  [&](launch_exit_atom, int32_t, int32_t status, const std::string&) { code = status; ended = true; return true; },
                  caf::after(kTimeout) >> [&] { timed_out = true; });
    ASSERT_FALSE(timed_out) << out;
  }
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("module __main__ ['--epochs', '2']"), std::string::npos) << out;
}

TEST(PythonModuleFilesTest, MapsDottedNamesToTheFilesPythonRuns) {
  EXPECT_EQ(python_module_files("train"), (std::vector<std::string>{"train.py", "train/__main__.py"}));
  EXPECT_EQ(python_module_files("pkg.sub.train_2"),
            (std::vector<std::string>{"pkg/sub/train_2.py", "pkg/sub/train_2/__main__.py"}));
  for (const char* bad : {"", ".train", "train.", "pkg..train", "2pkg.train", "pkg/train", "pkg.tr-ain", "-m"}) {
    EXPECT_THROW(python_module_files(bad), Error) << bad;
  }
  EXPECT_THROW(python_module_files(std::string(256, 'a')), Error);
}

TEST_F(LauncherTest, RefusesWhatARequestMayNotAsk) {
  caf::scoped_actor sink{system_->get()};
  const auto refused = [&](const std::function<void(json&)>& change, const std::string& why) {
    json req = request();
    change(req);
    const std::string result = launch(req, sink);
    EXPECT_NE(result.find(why), std::string::npos) << "got: " << result << "; expected: " << why;
  };
  refused([](json& r) { r["argv"][0] = "bash"; }, "the program 'bash' is not a Python interpreter");
  refused([](json& r) { r["argv"][0] = "bin/python3"; }, "is a relative path");
  refused([](json& r) { r["argv"][1] = "../outside.py"; }, "has a '..' component");
  refused([](json& r) { r["argv"][1] = (fs::path("/") / "etc" / "passwd").string(); }, "must be a path inside the working folder");
  refused([](json& r) { r["argv"][1] = "missing.py"; }, "no script 'missing.py' in the staged working folder");
  refused([](json& r) { r["argv"] = json::array({"python3", "-m"}); }, "'argv' has '-m' but no module after it");
  refused([](json& r) { r["argv"] = json::array({"python3", "-m", "no.such"}); },
          "no module 'no.such' in the staged working folder (looked for no/such.py and no/such/__main__.py)");
  refused([](json& r) { r["argv"] = json::array({"python3", "-m", "../outside"}); }, "is not a module name");
  refused([](json& r) { r["argv"] = json::array({"python3", "-m", "pkg..train"}); }, "is not a module name");
  refused([&](json& r) { r["cwd"] = root_.string(); }, "is not a folder staged on this node");
  refused([&](json& r) { r["cwd"] = staged_.string() + "/../0123456789abcdef"; }, "is not an absolute, normal path");
  refused([](json& r) { r["env"]["LD_PRELOAD"] = "x.so"; }, "may set PARTITA_ variables only");
  refused([](json& r) { r["env"]["PARTITA_TLS_DIR"] = "/tmp"; }, "may not set PARTITA_TLS_DIR");
  refused([](json& r) { r["argv"] = json::array({"python3"}); }, "'argv' must list the interpreter, the script");
  refused([](json& r) { r["argv"].push_back(std::string(kMaxArgBytes + 1, 'a')); }, "'argv[4]' is 16385 bytes");
  refused([](json& r) {
    for (int i = 0; i < 20; ++i) r["argv"].push_back(std::string(kMaxArgBytes, 'a'));
  }, "at most 262144");
  refused([](json& r) { r["argv"][2] = std::string("a\0b", 3); }, "holds a NUL byte");
  refused([](json& r) { r["index"] = -1; }, "'index' must be a whole number");
  refused([](json& r) { r.erase("env"); }, "needs 'env'");
  EXPECT_NE(launch(json("not an object"), sink).find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace partita::runtime

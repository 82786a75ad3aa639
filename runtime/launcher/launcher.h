// The node's side of a Python job (training/python_job.h) as an actor type: the job's
// driver spawns a "launcher" on a node for each process it runs there (owned by the driver
// like a job's other actors, runtime/host.h) and tells it what to run, with one message:
//
//   (launch, request, sink) -> the process's pid | error naming the problem
//
// where request is JSON {"index": the process's number in the job (a rank), "argv":
// [PYTHON, SCRIPT, ARGS...], "cwd": the folder staged for the job on this node
// (runtime/staging/stager.h), "env": {"PARTITA_...": "..."}}. From then on the launcher
// sends `sink` (an actor of the driver's) the process's output and its end, each a request
// the sink answers (true) before the next goes, so a slow driver slows the process down
// instead of filling memory:
//
//   (launch_output, index, lines)       lines of stdout and stderr, each ending in '\n'
//   (launch_exit, index, code, tail)    its exit status (128 + signal) and stderr's last lines
//
// and stops once the process is gone. (launch_stop, grace_ms) stops the process (its
// process group: SIGTERM, SIGKILL after grace_ms) and then the launcher; so does the
// launcher's own end (its owner gone, the daemon shutting down): nothing it started
// outlives it, and the process dies with its daemon (runtime/launcher/launched_process.h).
//
// The request comes from the network, and is checked before anything runs (an error names
// the field): argv holds 2 to kMaxArgs texts of at most kMaxArgBytes each (kMaxArgvBytes
// together) without NUL bytes; argv[0] is a Python interpreter (`python`, `python3` or
// `python3.N`: by name, found on the daemon's PATH, or an absolute path to one); argv[1],
// the script, is a relative path without '.' or '..' components that names a regular file
// inside `cwd`, symbolic links resolved, or argv[1] is "-m" and argv[2] a module name one of
// whose files (python_module_files) is such a file; `cwd` is a folder staged in this daemon's cache
// (CACHE/folders/KEY); env names only PARTITA_ variables (at most kMaxEnv, values of at most
// kMaxArgBytes), and none of the daemon's own (PARTITA_TLS_DIR).
//
// The process runs as the daemon's user in `cwd`, with the daemon's environment less its
// PARTITA_ variables, plus the request's, PYTHONPATH starting with `cwd` (the staged
// folder's modules import as they did in the working folder), PYTHONUNBUFFERED=1 (unless the
// daemon's environment sets it: lines come as they are printed), and PARTITA_TLS_DIR, the
// daemon's own credentials folder (absent in insecure mode): the process is a member of
// the cluster like the node (partita.init(address=...) needs a node's certificate, docs/
// cluster.md) and reads only files its user reads already.
#pragma once

#include <caf/atom.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/host.h"

namespace partita::runtime {

using launch_atom = caf::atom_constant<caf::atom("p_launch")>;
using launch_output_atom = caf::atom_constant<caf::atom("p_lout")>;
using launch_exit_atom = caf::atom_constant<caf::atom("p_lexit")>;
using launch_stop_atom = caf::atom_constant<caf::atom("p_lstop")>;

constexpr const char* kLauncherType = "launcher";

inline constexpr size_t kMaxArgs = 1024;
inline constexpr size_t kMaxArgBytes = 16 * 1024;
inline constexpr size_t kMaxArgvBytes = 256 * 1024;
inline constexpr size_t kMaxEnv = 64;
inline constexpr int64_t kMaxStopGraceMs = 60000;

struct LauncherOptions {
  std::string cache_dir;  // the daemon's staging cache: a request's cwd must be one of its folders
  std::string tls_dir;    // the daemon's credentials folder, absolute ("": insecure mode)
};

void add_launcher_type(ActorTypeRegistry& registry, LauncherOptions options);

// Whether `name` is a Python interpreter's file name as above.
bool is_python_interpreter_name(const std::string& name);

// The files, relative to the folder it runs in, that `python3 -m MODULE` may run: for
// "pkg.train", "pkg/train.py" and then "pkg/train/__main__.py" (a package). MODULE is
// dotted Python identifiers (ASCII letters, digits, '_'; not starting with a digit), at most
// 255 bytes; throws Error naming the problem otherwise.
std::vector<std::string> python_module_files(const std::string& module);

}  // namespace partita::runtime

// The SLURM_* environment `partita start --slurm` reads (runtime/cluster/slurm_allocation.h).
// What a user relies on: Slurm's compressed host lists expand as Slurm expands them (the
// head is their first host), a step's variables win over its job's, the head's port is the
// same in every task of a job, and an environment that is not a Slurm step, or a malformed
// one, is refused naming the variable and what is wrong with it.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "runtime/cluster/slurm_allocation.h"

namespace partita::runtime {
namespace {

using Hosts = std::vector<std::string>;

TEST(SlurmHostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_slurm_hostlist("node1"), Hosts({"node1"}));
  EXPECT_EQ(expand_slurm_hostlist("node[01-03,7]"), Hosts({"node01", "node02", "node03", "node7"}));
  EXPECT_EQ(expand_slurm_hostlist("a,b[8-10],c"), Hosts({"a", "b8", "b9", "b10", "c"}));
  EXPECT_EQ(expand_slurm_hostlist("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_hostlist("r[1-2]n[1-2]"), Hosts({"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_slurm_hostlist("gpu[3]-ib"), Hosts({"gpu3-ib"}));
  EXPECT_EQ(expand_slurm_hostlist("x[1-2],y[5,3]"), Hosts({"x1", "x2", "y5", "y3"}));
}

TEST(SlurmHostlist, RefusesMalformedListsSayingWhat) {
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist(""), "empty");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[1-3"), "'[' without its ']'");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node1-3]"), "']' without its '['");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("a,,b"), "empty entry");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("a,"), "empty entry");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[]"), "empty range");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[1,,2]"), "empty range");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[a-c]"), "'a-c' in [a-c] is not a number");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[1-2-3]"), "is not a number or a range");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[5-2]"), "the range '5-2' ends below its start");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[[1]]"), "brackets inside brackets");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("node[1-99999999]"), "more than 65536 hosts");
  EXPECT_THROW_CONTAINS(expand_slurm_hostlist("a[1-300]b[1-300]"), "more than 65536 hosts");
}

std::map<std::string, std::string> step_env() {
  return {{"SLURM_JOB_ID", "4242"},          {"SLURM_PROCID", "1"},
          {"SLURM_NTASKS", "3"},             {"SLURM_NNODES", "3"},
          {"SLURM_JOB_NODELIST", "c[1-3]"},  {"SLURMD_NODENAME", "c2"},
          {"SLURM_SUBMIT_DIR", "/home/u/x"}};
}

TEST(SlurmAllocation, ReadsAStepsEnvironment) {
  const SlurmAllocation a = parse_slurm_allocation(step_env());
  EXPECT_EQ(a.job_id, "4242");
  EXPECT_EQ(a.proc_id, 1);
  EXPECT_FALSE(a.head());
  EXPECT_EQ(a.tasks, 3);
  EXPECT_EQ(a.nodes, 3);
  EXPECT_EQ(a.hosts, Hosts({"c1", "c2", "c3"}));
  EXPECT_EQ(a.head_host(), "c1");
  EXPECT_EQ(a.this_node, "c2");
  EXPECT_EQ(a.submit_dir, "/home/u/x");
}

TEST(SlurmAllocation, TheStepsVariablesWinOverTheJobs) {
  auto env = step_env();
  env["SLURM_STEP_NODELIST"] = "c[2-3]";
  env["SLURM_STEP_NUM_NODES"] = "2";
  env["SLURM_STEP_NUM_TASKS"] = "2";
  env["SLURM_PROCID"] = "0";
  const SlurmAllocation a = parse_slurm_allocation(env);
  EXPECT_TRUE(a.head());
  EXPECT_EQ(a.hosts, Hosts({"c2", "c3"}));
  EXPECT_EQ(a.tasks, 2);
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.head_host(), "c2");
}

TEST(SlurmAllocation, OlderNamesServeToo) {
  const SlurmAllocation a = parse_slurm_allocation(
      {{"SLURM_JOBID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_NPROCS", "2"}, {"SLURM_JOB_NUM_NODES", "1"},
       {"SLURM_NODELIST", "solo"}});
  EXPECT_EQ(a.job_id, "7");
  EXPECT_EQ(a.tasks, 2);
  EXPECT_EQ(a.hosts, Hosts({"solo"}));
  EXPECT_EQ(a.this_node, "");
}

TEST(SlurmAllocation, NamesEveryMissingVariable) {
  const std::string message = testing::error_of([] { parse_slurm_allocation({}); });
  EXPECT_CONTAINS(message, "not in a Slurm job step");
  for (const char* name : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NNODES", "SLURM_JOB_NODELIST"}) {
    EXPECT_CONTAINS(message, name);
  }
  auto env = step_env();
  env.erase("SLURM_PROCID");
  const std::string one = testing::error_of([&] { parse_slurm_allocation(env); });
  EXPECT_CONTAINS(one, "no SLURM_PROCID in the environment");
  EXPECT_EQ(one.find("SLURM_JOB_ID"), std::string::npos) << one;
}

TEST(SlurmAllocation, RefusesMalformedValuesNamingTheVariable) {
  const auto with = [](const std::string& name, const std::string& value) {
    auto env = step_env();
    env[name] = value;
    return testing::error_of([&] { parse_slurm_allocation(env); });
  };
  EXPECT_CONTAINS(with("SLURM_JOB_ID", "12a"), "SLURM_JOB_ID='12a' is not a job id");
  EXPECT_CONTAINS(with("SLURM_NTASKS", "zero"), "SLURM_NTASKS='zero' is not a number of at least 1");
  EXPECT_CONTAINS(with("SLURM_NTASKS", "0"), "SLURM_NTASKS='0' is not a number of at least 1");
  EXPECT_CONTAINS(with("SLURM_PROCID", "-1"), "SLURM_PROCID='-1' is not a number");
  EXPECT_CONTAINS(with("SLURM_PROCID", "3"), "SLURM_PROCID=3 is not below SLURM_NTASKS=3");
  EXPECT_CONTAINS(with("SLURM_NNODES", "2"), "SLURM_JOB_NODELIST='c[1-3]' has 3 host(s), SLURM_NNODES says 2");
  EXPECT_CONTAINS(with("SLURM_JOB_NODELIST", "c[1-3"), "Slurm host list 'c[1-3': a '[' without its ']'");
  EXPECT_CONTAINS(with("SLURM_JOB_NODELIST", "c1,c[1-2]"), "names a host twice");
  auto env = step_env();
  env["SLURM_NTASKS"] = "2";
  env["SLURM_PROCID"] = "0";
  EXPECT_CONTAINS(testing::error_of([&] { parse_slurm_allocation(env); }), "fewer tasks than nodes");
}

TEST(SlurmAllocation, TheHeadsPortComesFromTheJobsId) {
  EXPECT_EQ(slurm_head_port("4242"), kSlurmPortBase + 4242);
  EXPECT_EQ(slurm_head_port("123456"), kSlurmPortBase + 3456);
  EXPECT_EQ(slurm_head_port("0"), kSlurmPortBase);
  EXPECT_LT(slurm_head_port("99999999"), 32768);  // below Linux's ephemeral ports
  EXPECT_THROW_CONTAINS(slurm_head_port("x1"), "Slurm job id 'x1' is not a number");
}

}  // namespace
}  // namespace partita::runtime

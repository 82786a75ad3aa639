"""Python jobs: the user's script run on a cluster's nodes (`partita submit --address HEAD --
python3 SCRIPT ARGS`).

A real cluster on loopback (test_cluster.py's: a head and two nodes, each with a staging
cache of its own), shared by the tests but the one that kills a node, which has its own.
The working folder, made here, holds job_script.py and distributed_rank.py and is staged
to the nodes; each rank's process, run by a node's launcher, trains PyG's GraphSAGE on its
share of Cora with its gradients averaged through partita.distributed, checkpointing every
epoch (partita.save_checkpoint). Every wait has a deadline; a cluster's processes are
stopped when the tests that use it end, passed or not.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import torch

from test_cluster import cli, cluster, running_cluster, wait_for_nodes  # noqa: F401: cluster is a fixture

HERE = os.path.dirname(os.path.abspath(__file__))
import distributed_rank  # noqa: E402  (python/tests is on sys.path under pytest)

DEADLINE = 300  # seconds, for a job to end or a process to appear or go


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One cluster for the tests that leave its head and nodes as they found them (the test that
    kills a node has a cluster of its own): (head, tls, nodes, its folder). Three daemons, each
    loading libtorch, started once instead of for every test."""
    folder = tmp_path_factory.mktemp("shared-cluster")
    for head, tls, nodes in running_cluster(folder):
        yield head, tls, nodes, folder


def workdir(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("job_script.py", "distributed_rank.py"):
        shutil.copy(os.path.join(HERE, name), folder / name)
    return folder


def partita_cli(tls, *args, cwd=None, timeout=DEADLINE):
    return subprocess.run([cli(), "--tls-dir", str(tls), *[str(a) for a in args]], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def submitted_id(out):
    found = re.search(r"job (\S+) submitted to", out.stdout)
    assert found, out.stdout + out.stderr
    return found.group(1)


def job_status(head, tls, job):
    out = partita_cli(tls, "job", "status", job, "--address", head, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wait_until(what, check):
    until = time.monotonic() + DEADLINE
    while time.monotonic() < until:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} within {DEADLINE} s")


def listed_job(head, tls, job):
    """The job's entry in `partita status --json`, None while the head lists no such job: what a
    wait polls, as that command starts in milliseconds (`job status` loads libtorch first)."""
    out = partita_cli(tls, "status", "--address", head, "--json")
    assert out.returncode == 0, out.stderr
    return next((j for j in json.loads(out.stdout)["jobs"] if j["id"] == job), None)


def wait_for_end(head, tls, job):
    """The job's `partita job status` once the head lists it as ended."""
    wait_until(f"job {job} did not end",
               lambda: (lambda j: j is not None and j["state"] in ("done", "failed", "cancelled"))(
                   listed_job(head, tls, job)))
    return job_status(head, tls, job)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False




def assert_reference_parameters(out, graph, world_size, epochs):
    params = torch.load(out)
    expected = distributed_rank.one_process_reference(graph, world_size, epochs)
    assert params.keys() == expected.keys()
    for name in expected:
        assert torch.allclose(params[name], expected[name], rtol=0, atol=1e-6), \
            f"{name}: the job's differs from the one-process reference by {(params[name] - expected[name]).abs().max()}"


def test_a_python_job_trains_on_two_nodes_to_the_reference_and_its_logs_come_back(shared, cora_parts, tmp_path):
    head, tls, _, folder = shared
    wait_for_nodes(head, tls, 2)
    graph = cora_parts[2]
    out = tmp_path / "params.pt"
    submit = partita_cli(tls, "submit", "--address", head, "--ranks", "2", "--", "/usr/bin/python3", "job_script.py",
                         graph.path, 2, out, cwd=workdir(tmp_path))
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job = submitted_id(submit)
    assert f"job {job} done" in submit.stdout
    assert "[rank 1] rank 1 of 2 starts after epoch 0 (restart 0)" in submit.stdout
    assert_reference_parameters(out, graph, 2, 2)
    logs = partita_cli(tls, "logs", job, "--address", head)
    assert logs.returncode == 0, logs.stderr
    for rank in (0, 1):
        assert f"[rank {rank}] epoch 2 done" in logs.stdout, logs.stdout
    status = job_status(head, tls, job)
    assert status["state"] == "done"
    listed = partita_cli(tls, "job", "list", "--address", head)
    assert re.search(rf"^{re.escape(job)}\s+done", listed.stdout, re.M), listed.stdout
    # The working folder is staged once: the same content again is served from the caches.
    units = {n: sorted(os.listdir(folder / f"cache-{n}" / "units")) for n in ("node-1", "node-2")}
    assert all(units.values()), units
    again = partita_cli(tls, "job", "submit", "--address", head, "--ranks", "2", "--", "/usr/bin/python3",
                        "job_script.py", graph.path, 1, tmp_path / "again.pt", cwd=tmp_path / "work")
    assert again.returncode == 0, again.stdout + again.stderr
    assert units == {n: sorted(os.listdir(folder / f"cache-{n}" / "units")) for n in ("node-1", "node-2")}


def test_a_python_job_survives_a_killed_node_and_resumes_from_its_checkpoint(cluster, cora_parts, tmp_path):  # noqa: F811
    head, tls, nodes = cluster
    wait_for_nodes(head, tls, 2)
    graph = cora_parts[2]
    out, pids = tmp_path / "params.pt", tmp_path / "pids"
    pids.mkdir()
    submit = partita_cli(tls, "submit", "--address", head, "--ranks", "2", "--slots-per-node", "2", "--detach", "--",
                         "/usr/bin/python3", "job_script.py", graph.path, 3, out, "--pause-after", 1, "--pid-dir", pids,
                         cwd=workdir(tmp_path))
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job = submitted_id(submit)
    checkpoint = tmp_path / "runs" / job / "checkpoints" / "checkpoint.pt"
    wait_until("the first epoch's checkpoint did not come", lambda: checkpoint.exists())
    assert torch.load(checkpoint)["epoch"] == 1
    first = wait_until("the ranks' pids did not come", lambda: (lambda f: f if len(f) == 2 else None)(
        sorted(p for p in os.listdir(pids) if p.endswith(".pid") and "-0-" in p)))
    victim = nodes[1]
    on_victim = [int((pids / f).read_text()) for f in first if f.endswith("-node-2.pid")]
    assert len(on_victim) == 1, first
    os.kill(victim.process.pid, signal.SIGKILL)  # the daemon alone: its processes must die with it
    victim.process.wait()
    wait_until("the killed node's rank process did not die with its daemon", lambda: not alive(on_victim[0]))
    status = wait_for_end(head, tls, job)
    assert status["state"] == "done", status
    assert status["restarts"] == 1
    logs = partita_cli(tls, "logs", job, "--address", head).stdout
    assert "lost " in logs and "restart 1 of at most 3" in logs, logs
    assert "rank 1 of 2 starts after epoch 1 (restart 1)" in logs, logs
    assert_reference_parameters(out, graph, 2, 3)


def test_partita_stop_ends_every_process_of_a_python_job(shared, cora_parts, tmp_path):
    head, tls, _, _ = shared
    wait_for_nodes(head, tls, 2)
    pids = tmp_path / "pids"
    pids.mkdir()
    submit = partita_cli(tls, "submit", "--address", head, "--ranks", "2", "--detach", "--", "/usr/bin/python3",
                         "job_script.py", cora_parts[2].path, 50, tmp_path / "never.pt", "--pause-after", 1,
                         "--pid-dir", pids, cwd=workdir(tmp_path))
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job = submitted_id(submit)
    files = wait_until("the ranks' pids did not come",
                       lambda: (lambda f: f if len(f) == 2 else None)([p for p in os.listdir(pids) if p.endswith(".pid")]))
    running = [int((pids / f).read_text()) for f in files]
    assert all(alive(pid) for pid in running)
    stop = partita_cli(tls, "stop", job, "--address", head)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    wait_until("a rank process outlived partita stop", lambda: not any(alive(pid) for pid in running))
    assert job_status(head, tls, job)["state"] == "cancelled"


def test_a_failing_script_fails_the_job_with_its_status_and_stderr(shared, cora_parts, tmp_path):
    head, tls, _, _ = shared
    wait_for_nodes(head, tls, 2)
    submit = partita_cli(tls, "submit", "--address", head, "--ranks", "2", "--", "/usr/bin/python3", "job_script.py",
                         cora_parts[2].path, 1, tmp_path / "never.pt", "--fail", 7, cwd=workdir(tmp_path))
    assert submit.returncode != 0
    job = submitted_id(submit)
    status = job_status(head, tls, job)
    assert status["state"] == "failed"
    assert re.search(r"rank \d on \S+ exited with status 7", status["message"]), status
    assert "fails on purpose" in status["message"], status


def test_a_module_of_the_working_folder_runs_with_dash_m(shared, tmp_path):
    head, tls, _, _ = shared
    wait_for_nodes(head, tls, 2)
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "hello.py").write_text(
        "import os, sys\nprint('rank', os.environ['PARTITA_RANK'], 'ran', __name__, sys.argv[1:])\n")
    submit = partita_cli(tls, "submit", "--address", head, "--ranks", "2", "--", "/usr/bin/python3", "-m", "pkg.hello",
                         "--greeting", "hi", cwd=work)
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job = submitted_id(submit)
    assert f"job {job} done" in submit.stdout
    for rank in (0, 1):
        assert f"[rank {rank}] rank {rank} ran __main__ ['--greeting', 'hi']" in submit.stdout, submit.stdout


def test_bad_python_jobs_are_refused_naming_the_problem(shared, tmp_path):
    head, tls, _, _ = shared
    wait_for_nodes(head, tls, 2)
    work = workdir(tmp_path)
    (tmp_path / "outside.py").write_text("print('not staged')\n")
    (work / "a" / "b").mkdir(parents=True)
    (work / "a" / "b" / "deep.py").write_text("print('not staged')\n")
    cases = [
        (["--", "python3", "missing.py"], "no script missing.py in the working folder"),
        (["--", "python3", "../outside.py"], "is outside the working folder"),
        (["--", "python3", str(tmp_path / "outside.py")], "is outside the working folder"),
        (["--ranks", "3", "--", "python3", "job_script.py"],
         "world size 3 (--ranks) is larger than the cluster's 2 trainer slot(s): 2 live node(s), 1 slot(s) each"),
        (["--", "bash", "job_script.py"], "'bash' is not a Python interpreter"),
        (["--", "python3"], "a Python job's command is PYTHON SCRIPT"),
        (["--", "python3", "-m"], "the command has '-m' but no module after it"),
        (["--", "python3", "-m", "no.such"], "no module no.such in the working folder"),
        (["--", "python3", "-m", "no/such"], "'no/such' is not a module name"),
        (["--", "python3", "-m", "a.b.deep"], "the module a.b.deep (a/b/deep.py) is more than one folder down"),
    ]
    for args, message in cases:
        out = partita_cli(tls, "submit", "--address", head, *args, cwd=work, timeout=60)
        assert out.returncode != 0, (args, out.stdout)
        assert message in out.stderr, (args, out.stderr)
        assert "submitted" not in out.stdout

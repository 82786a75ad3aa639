"""partita.distributed: data-parallel training across processes, gradients averaged through
Partita's allreduce group.

Two rank processes (distributed_rank.py) on a real cluster on loopback (a head and two
nodes, as in test_cluster.py), their loaders' actors on the nodes, each training PyG's
GraphSAGE on its half of Cora's train seeds, end with the same parameters, and with those of
a one-process reference that averages the gradients of the two halves itself. Every rank
process has a deadline and is killed when the test ends, passed or not.
"""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

import partita
import partita.distributed as dist
from test_cluster import cluster, wait_for_nodes  # noqa: F401: cluster is a fixture

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distributed_rank  # noqa: E402

RANK_DEADLINE = 240  # seconds, for a rank process to end


class Ranks:
    """Rank processes of one group, each with PARTITA_RANK and PARTITA_WORLD_SIZE set."""

    def __init__(self):
        self.processes = []

    def start(self, rank, world_size, args):
        env = dict(os.environ, PARTITA_RANK=str(rank), PARTITA_WORLD_SIZE=str(world_size))
        process = subprocess.Popen([sys.executable, os.path.join(HERE, "distributed_rank.py")] + [str(a) for a in args],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def wait_all(self):
        """Every process's exit code and output; fails naming the one that did not end in time."""
        results = []
        for process in self.processes:
            try:
                output, _ = process.communicate(timeout=RANK_DEADLINE)
            except subprocess.TimeoutExpired:
                self.kill()
                output, _ = process.communicate()
                pytest.fail(f"rank process {process.args[2:]} did not end within {RANK_DEADLINE} s: {output}")
            results.append((process.returncode, output))
        return results

    def kill(self):
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def ranks():
    r = Ranks()
    yield r
    r.kill()




def test_two_ranks_on_a_cluster_train_to_the_parameters_of_one_process(cluster, cora_parts, ranks, tmp_path):  # noqa: F811
    head, tls, _ = cluster
    wait_for_nodes(head, tls, 2)
    graph = cora_parts[2]
    outs = [tmp_path / f"rank{r}.pt" for r in range(2)]
    for r in range(2):
        ranks.start(r, 2, ["train", head, tls, "sage", graph.path, outs[r]])
    for code, output in ranks.wait_all():
        assert code == 0, output
    params = [torch.load(out) for out in outs]
    expected = distributed_rank.one_process_reference(graph, 2)
    assert params[0].keys() == expected.keys()
    for name in expected:
        assert torch.equal(params[0][name], params[1][name]), f"{name} differs between the ranks"
        assert torch.allclose(params[0][name], expected[name], rtol=0, atol=1e-6), \
            f"{name}: the ranks' differs from the one-process reference by " \
            f"{(params[0][name] - expected[name]).abs().max().item()}"
    # Training moved them: the check is not of the initial parameters.
    initial = distributed_rank.new_model(graph).state_dict()
    assert any(not torch.equal(initial[name], expected[name]) for name in expected)


def test_ranks_that_disagree_on_the_world_size_both_fail_naming_it(cluster, ranks, tmp_path):  # noqa: F811
    head, tls, _ = cluster
    outs = [tmp_path / f"rank{r}.json" for r in range(2)]
    ranks.start(0, 2, ["join", head, tls, "mismatch", outs[0]])
    ranks.start(1, 3, ["join", head, tls, "mismatch", outs[1]])
    for code, output in ranks.wait_all():
        assert code == 0, output
    results = [json.loads(out.read_text()) for out in outs]
    for result in results:
        assert not result["ok"]
        assert result["type"] == "Error"
        assert "group 'mismatch'" in result["message"]
        assert "every rank must give the same world size" in result["message"]


def test_a_rank_lost_fails_the_others_allreduce_naming_it(cluster, ranks, tmp_path):  # noqa: F811
    head, tls, _ = cluster
    outs = [tmp_path / f"rank{r}.json" for r in range(2)]
    for r in range(2):
        ranks.start(r, 2, ["lose", head, tls, "lost", outs[r]])
    ranks.wait_all()
    result = json.loads(outs[0].read_text())
    assert not result["ok"]
    assert result["type"] == "Error"
    assert "rank 1" in result["message"], result["message"]


def test_a_rank_outside_the_world_or_a_world_without_a_cluster_is_refused():
    with pytest.raises(partita.UsageError, match="the rank must be 0 to world_size - 1"):
        partita.init_process_group(rank=2, world_size=2)
    with pytest.raises(partita.UsageError, match=r"call partita.init\(address='HEAD:PORT'\) first"):
        partita.init_process_group(rank=0, world_size=2)
    with pytest.raises(partita.UsageError, match="PARTITA_RANK='one' is not an integer"):
        os.environ["PARTITA_RANK"] = "one"
        try:
            partita.init_process_group(world_size=2)
        finally:
            del os.environ["PARTITA_RANK"]
    assert not dist.is_initialized()


def test_a_world_of_one_sums_nothing_and_refuses_what_it_cannot_sum():
    partita.init_process_group(rank=0, world_size=1, group="solo")
    try:
        assert (partita.get_rank(), partita.get_world_size()) == (0, 1)
        with pytest.raises(partita.UsageError, match="already"):
            partita.init_process_group(rank=0, world_size=1)
        t = torch.arange(6, dtype=torch.float32)
        assert partita.allreduce_(t) is t
        assert torch.equal(t, torch.arange(6, dtype=torch.float32))
        with pytest.raises(partita.UsageError, match="torch.float64; only torch.float32"):
            partita.allreduce_(torch.zeros(3, dtype=torch.float64))
        with pytest.raises(partita.UsageError, match="not contiguous"):
            partita.allreduce_(torch.zeros(4, 4).t())
        with pytest.raises(partita.UsageError, match="holds float64; only float32"):
            partita.allreduce_(np.zeros(3))
        with pytest.raises(partita.UsageError, match="not C-contiguous"):
            partita.allreduce_(np.zeros((4, 4), dtype=np.float32).T)
        with pytest.raises(TypeError, match="not list"):
            partita.allreduce_([1.0, 2.0])
        model = torch.nn.Linear(3, 2)
        model(torch.ones(1, 3)).sum().backward()
        before = [p.grad.clone() for p in model.parameters()]
        partita.average_gradients(model)
        assert all(torch.equal(a, p.grad) for a, p in zip(before, model.parameters()))
    finally:
        partita.destroy_process_group()
    with pytest.raises(partita.RuntimeClosedError, match="the process group was destroyed"):
        partita.allreduce_(torch.zeros(3))
    with pytest.raises(partita.RuntimeClosedError, match="the process group was destroyed"):
        partita.get_rank()
    partita.destroy_process_group()  # again: nothing to do


def test_the_native_group_refuses_use_after_destroy():
    group = partita._partita.ProcessGroup("native", 0, 1, 10.0, 10.0)
    group.allreduce_sum(np.zeros(2, dtype=np.float32))
    group.destroy()
    assert group.destroyed
    with pytest.raises(partita.RuntimeClosedError, match="the process group was destroyed"):
        group.allreduce_sum(np.zeros(2, dtype=np.float32))
    with pytest.raises(partita.UsageError, match="timeout 0 s"):
        partita._partita.ProcessGroup("native", 0, 1, 0.0, 10.0)

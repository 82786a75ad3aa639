"""partita.init(address=HEAD): the loaders' actors on a cluster's nodes, over mutual TLS.

A real cluster on loopback: a head and two nodes (`partita daemon`, PARTITA_CLI, which ctest
sets to the built binary), its CA made by the head in a temporary folder; every process is
stopped when the test ends, passed or not.
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

import partita
import partita.pyg
from test_loader import assert_same_batches, epoch

DEADLINE = 60  # seconds, for each process to come up and for the nodes to join


def cli():
    path = os.environ.get("PARTITA_CLI", "")
    if not os.access(path, os.X_OK):
        pytest.fail(f"PARTITA_CLI={path!r} is not the partita binary (ctest sets it to the build's)")
    return path


class Daemon:
    """A `partita daemon` child in a process group of its own; `address` once it listens."""

    def __init__(self, args):
        self.process = subprocess.Popen([cli(), "--log-level", "warn"] + args, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.output = []
        until = time.monotonic() + DEADLINE
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"partita daemon {args} did not listen within {DEADLINE} s: {''.join(self.output)}")
            if line is None:
                pytest.fail(f"partita daemon {args} ended: {''.join(self.output)}")
            self.output.append(line)
            if line.startswith("partita daemon listening on "):
                self.address = line.split()[-1]
                return

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def running_cluster(folder):
    """A head and two nodes with their files in `folder` (tls, runs, cache-node-1, cache-node-2):
    yields (head address, tls folder, nodes' Daemons) and stops them all when resumed."""
    tls = folder / "tls"
    daemons = []
    try:
        head = Daemon(["--tls-dir", str(tls), "daemon", "--head", "--listen", "127.0.0.1:0", "--runs",
                       str(folder / "runs")])
        daemons.append(head)
        for name in ("node-1", "node-2"):
            daemons.append(Daemon(["--tls-dir", str(tls), "daemon", "--join", head.address, "--name", name,
                                   "--cache", str(folder / f"cache-{name}")]))
        yield head.address, tls, daemons[1:]
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.fixture
def cluster(tmp_path):
    yield from running_cluster(tmp_path)


def wait_for_nodes(head, tls, count):
    """Until `count` nodes are alive in the head's status (they join on their own time)."""
    until = time.monotonic() + DEADLINE
    while time.monotonic() < until:
        out = subprocess.run([cli(), "--tls-dir", str(tls), "status", "--address", head, "--json"],
                             capture_output=True, text=True, timeout=DEADLINE)
        if out.returncode == 0 and sum(n["state"] == "alive" for n in json.loads(out.stdout)["nodes"]) >= count:
            return
        time.sleep(0.2)
    pytest.fail(f"{count} nodes did not join the head at {head} within {DEADLINE} s")


def test_loaders_on_a_clusters_nodes_give_the_in_process_batches(cluster, cora_parts):
    head, tls, nodes = cluster
    wait_for_nodes(head, tls, 2)
    graph = cora_parts[2]

    def batches():
        loader = partita.pyg.NeighborLoader(graph, num_neighbors=[10, 5], batch_size=64, input_nodes="val",
                                            shuffle=True, seed=9)
        return [epoch(loader) for _ in range(2)]

    here = batches()
    assert partita.nodes() == ["in-process"]
    partita.shutdown()
    try:
        with pytest.raises(partita.Error, match="ca.crt"):  # mutual TLS: no credentials, no cluster
            partita.init(head, tls_dir=tls.parent / "no-credentials")
        # A user's certificate submits jobs to the head; it runs no actors on the nodes.
        user = tls.parent / "alice"
        subprocess.run([cli(), "cluster", "cert", "alice", "--dir", str(tls), "-o", str(user)], check=True,
                       capture_output=True, timeout=DEADLINE)
        with pytest.raises(partita.Error, match="needs a node's certificate.*'alice'.*has role user"):
            partita.init(head, tls_dir=user)
        partita.init(head, tls_dir=tls)
        assert sorted(partita.nodes()) == sorted(d.address for d in nodes)
        # Partition 0 and the sampler on one node, partition 1 on the other; batches cross
        # processes as Cap'n Proto messages.
        there = batches()
        for one, other in zip(there, here):
            assert_same_batches(one, other)
    finally:
        partita.shutdown()
        partita.init(threads=2)

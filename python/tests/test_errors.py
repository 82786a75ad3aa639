"""Bad input raises a Python exception naming the problem; a closed runtime says so."""

import threading

import numpy as np
import pytest
import torch

import partita
import partita.pyg


def loader(graph, **kwargs):
    args = dict(num_neighbors=[5, 5], batch_size=16, input_nodes="train")
    args.update(kwargs)
    return partita.pyg.NeighborLoader(graph, **args)


def test_wrong_types_raise_type_errors(cora_parts):
    graph = cora_parts[1]
    with pytest.raises(TypeError, match="data must be a partita.Graph"):
        partita.pyg.NeighborLoader(42, num_neighbors=[5])
    with pytest.raises(TypeError, match="num_neighbors must be a list of ints"):
        loader(graph, num_neighbors="5,5")
    with pytest.raises(TypeError, match="num_neighbors must be a list of ints"):
        loader(graph, num_neighbors=[5.0])
    with pytest.raises(TypeError, match="heterogeneous"):
        loader(graph, num_neighbors={("a", "b", "c"): [5]})
    with pytest.raises(TypeError, match="batch_size must be an int"):
        loader(graph, batch_size=16.0)
    with pytest.raises(TypeError, match="input_nodes must hold integer node ids or bools, not float"):
        loader(graph, input_nodes=np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="input_nodes must be None, a split name, a mask or node ids"):
        loader(graph, input_nodes={1, 2})
    with pytest.raises(TypeError, match="unsupported arguments: num_workers"):
        loader(graph, num_workers=4)
    with pytest.raises(TypeError, match="source must be a torch_geometric.data.Data or a path"):
        partita.partition(3.5, "/nonexistent/out")


def test_bad_values_name_the_problem(cora_parts):
    graph = cora_parts[2]
    with pytest.raises(partita.UsageError, match="node 2708 .at position 1. is outside the graph's 2708 nodes"):
        loader(graph, input_nodes=torch.tensor([0, 2708]))
    with pytest.raises(ValueError, match="node -1 .at position 0. is outside"):  # UsageError is a ValueError
        loader(graph, input_nodes=[-1])
    with pytest.raises(partita.UsageError, match="node 7 appears more than once"):
        loader(graph, input_nodes=[7, 3, 7])
    with pytest.raises(partita.UsageError, match="a mask of 10 entries; the graph has 2708 nodes"):
        loader(graph, input_nodes=torch.ones(10, dtype=torch.bool))
    with pytest.raises(partita.UsageError, match="no split 'training' .train, val or test."):
        loader(graph, input_nodes="training")
    with pytest.raises(partita.UsageError, match="batch_size 0"):
        loader(graph, batch_size=0)
    with pytest.raises(partita.UsageError, match="num_neighbors is empty"):
        loader(graph, num_neighbors=[])
    with pytest.raises(partita.Error, match="fanouts"):
        loader(graph, num_neighbors=[5, -7])
    with pytest.raises(partita.Error, match="prefetch"):
        loader(graph, prefetch=0)
    with pytest.raises(partita.UsageError, match=r"timeout 0 s \(must be more than 0"):
        loader(graph, timeout=0)
    with pytest.raises(partita.Error, match="^NeighborLoader: .*setting 'features': 'gpu' is not a feature storage"):
        loader(graph, features="gpu")
    with pytest.raises(partita.UsageError, match="log_level 'loud' is not one of"):
        partita.init(log_level="loud")


def test_missing_or_broken_partition_folders(tmp_path, cora_parts):
    with pytest.raises(partita.Error, match="'.*nowhere' does not exist"):
        partita.Graph(str(tmp_path / "nowhere"))
    with pytest.raises(partita.Error, match="has no META.json"):
        partita.Graph(str(tmp_path))
    with pytest.raises(partita.Error, match="does not exist"):
        partita.pyg.NeighborLoader(str(tmp_path / "nowhere"), num_neighbors=[5])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "META.json").write_text("{not json")
    with pytest.raises(partita.Error, match="META.json"):
        partita.Graph(str(broken))
    with pytest.raises(partita.UsageError, match="already exists .pass overwrite=True to replace it."):
        partita.partition(cora_parts[1].path, cora_parts[1].path, format="linqs")


def test_a_closed_runtime_raises_and_init_again_recovers(cora_parts):
    graph = cora_parts[2]
    live = loader(graph)
    iterator = iter(live)
    next(iterator)
    partita.shutdown()
    try:
        assert not partita.is_running()
        with pytest.raises(partita.RuntimeClosedError, match="was shut down"):
            next(iterator)
        with pytest.raises(partita.RuntimeClosedError, match="was shut down"):
            list(live)
        with pytest.raises(partita.RuntimeClosedError, match=r"partita.shutdown\(\)"):
            loader(graph)
        partita.shutdown()  # again: nothing to do
    finally:
        partita.init(threads=2)
    with pytest.raises(partita.UsageError, match="running already"):
        partita.init()
    assert len(list(loader(graph))) == 9
    with pytest.raises(partita.RuntimeClosedError, match="was shut down"):
        list(live)  # a loader of the stopped runtime stays closed
    closed = loader(graph)
    closed.close()
    with pytest.raises(partita.Error, match="NeighborLoader: closed"):
        list(closed)


def test_shutdown_releases_a_consumer_in_another_thread(cora_parts):
    # The consumer waits for batches with Python's lock released; a shutdown from this thread
    # must end its iteration with RuntimeClosedError at once, not hang or crash.
    graph = cora_parts[2]
    consumer = loader(graph, num_neighbors=[-1, -1], batch_size=1, input_nodes=None)
    outcome = {}
    started = threading.Event()

    def consume():
        try:
            for _ in range(100):
                for _batch in consumer:
                    started.set()
        except Exception as e:  # noqa: BLE001 - the outcome is what the test checks
            outcome["error"] = e

    thread = threading.Thread(target=consume)
    thread.start()
    try:
        assert started.wait(60)
        partita.shutdown()
        thread.join(60)
        assert not thread.is_alive()
        assert isinstance(outcome.get("error"), partita.RuntimeClosedError), outcome
    finally:
        if not partita.is_running():
            partita.init(threads=2)

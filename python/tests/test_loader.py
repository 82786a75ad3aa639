"""partita.pyg.NeighborLoader: the trainer's batches, partition invariance, PyG's layout,
no copies, epochs."""

import math

import numpy as np
import pytest
import torch

import partita
import partita.pyg
from conftest import assert_arrays_equal
from partita import _partita

FIELDS = ("n_id", "edge_index", "e_id", "x", "y")


def batch_arrays(batch):
    """A Data or a native batch dict as comparable numpy arrays."""
    if isinstance(batch, dict):
        out = {k: batch[k] for k in FIELDS}
        out["batch_size"] = batch["batch_size"]
        out["num_sampled_nodes"] = list(batch["num_sampled_nodes"])
        out["num_sampled_edges"] = list(batch["num_sampled_edges"])
        return out
    out = {k: getattr(batch, k).numpy() for k in FIELDS}
    out["batch_size"] = batch.batch_size
    out["num_sampled_nodes"] = list(batch.num_sampled_nodes)
    out["num_sampled_edges"] = list(batch.num_sampled_edges)
    return out


def assert_same_batches(got, want):
    assert len(got) == len(want)
    for b, (g, w) in enumerate(zip(got, want)):
        assert g["batch_size"] == w["batch_size"], f"batch {b}"
        assert g["num_sampled_nodes"] == w["num_sampled_nodes"], f"batch {b}"
        assert g["num_sampled_edges"] == w["num_sampled_edges"], f"batch {b}"
        for k in FIELDS:
            assert_arrays_equal(g[k], w[k], err_msg=f"batch {b}, {k}")


def epoch(loader):
    return [batch_arrays(b) for b in loader]


def test_loader_of_a_split_gives_the_trainers_batches(cora_parts):
    # On one part, the loader of "train" plans as the trainer's sampler plans its split, so
    # the two pipelines (a plan of our own, the sampler's own epoch) must agree batch for batch.
    graph = cora_parts[1]
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[10, 5], batch_size=32, input_nodes="train",
                                        shuffle=True, seed=7)
    for e in range(2):
        want = [batch_arrays(b) for b in _partita._split_epoch(graph, 0, "train", [10, 5], 32, 7, e, True)]
        assert len(want) == math.ceil(140 / 32)
        assert_same_batches(epoch(loader), want)


def test_seeds_of_another_part_give_that_parts_trainer_batches(cora_parts):
    # The loader's sampler sits with part 0; seeds owned by part 1 are sampled across
    # partitions, and must give what part 1's own trainer gets for them.
    graph = cora_parts[2]
    global_of = graph.global_ids()
    book = graph.partition_book
    train = graph.split("train")
    owned = train[(global_of[train] >= book[1]) & (global_of[train] < book[2])]
    seeds = owned[np.argsort(global_of[owned])]  # the trainer's order: global ids
    assert 0 < len(seeds) < len(train)
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[10, 5], batch_size=16, input_nodes=seeds,
                                        shuffle=True, seed=11)
    want = [batch_arrays(b) for b in _partita._split_epoch(graph, 1, "train", [10, 5], 16, 11, 0, True)]
    assert_same_batches(epoch(loader), want)


@pytest.mark.parametrize("fanouts,replace", [([10, 5], False), ([-1, 3], False), ([4, 4], True)])
def test_batches_do_not_depend_on_the_number_of_parts(cora_parts, fanouts, replace):
    loaders = [partita.pyg.NeighborLoader(cora_parts[k], num_neighbors=fanouts, batch_size=64, input_nodes="test",
                                          shuffle=True, seed=3, replace=replace) for k in (1, 2)]
    for _ in range(2):
        one, two = epoch(loaders[0]), epoch(loaders[1])
        assert len(one) == math.ceil(1000 / 64)
        assert_same_batches(two, one)


def test_batches_are_laid_out_as_pygs(cora_parts, cora):
    graph = cora_parts[2]
    fanouts = [6, 3]
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=fanouts, batch_size=50, input_nodes="val", shuffle=True)
    edges = set(zip(cora.edge_index[0].tolist(), cora.edge_index[1].tolist()))
    seen = []
    for batch in loader:
        n = batch.num_nodes
        b = batch.batch_size
        n_id = batch.n_id.numpy()
        assert batch.x.shape == (n, 1433) and batch.x.dtype == torch.float32
        assert batch.y.shape == (n,) and batch.y.dtype == torch.int64
        assert batch.edge_index.dtype == torch.int64 and batch.edge_index.shape[0] == 2
        assert len(np.unique(n_id)) == n
        # The seeds first, as given; input_id points into input_nodes.
        np.testing.assert_array_equal(loader.input_nodes[batch.input_id.numpy()], n_id[:b])
        seen.extend(n_id[:b].tolist())
        # Features, labels and edges are Cora's, in its own ids.
        assert_arrays_equal(batch.x.numpy(), cora.x[n_id])
        np.testing.assert_array_equal(batch.y.numpy(), cora.y[n_id])
        src, dst = batch.edge_index.numpy()
        assert all((n_id[s], n_id[d]) in edges for s, d in zip(src, dst)), "a sampled edge that Cora lacks"
        np.testing.assert_array_equal(cora.edge_index[:, batch.e_id.numpy()], n_id[batch.edge_index.numpy()])
        # Hop by hop: nodes added and edges sampled, every edge pointing at the previous hop's nodes.
        assert len(batch.num_sampled_nodes) == len(fanouts) + 1 and len(batch.num_sampled_edges) == len(fanouts)
        assert sum(batch.num_sampled_nodes) == n and batch.num_sampled_nodes[0] == b
        assert sum(batch.num_sampled_edges) == batch.edge_index.shape[1]
        nodes_before, edge_start = 0, 0
        for hop, fanout in enumerate(fanouts):
            frontier = batch.num_sampled_nodes[hop]
            hop_edges = slice(edge_start, edge_start + batch.num_sampled_edges[hop])
            hop_dst = dst[hop_edges]
            assert ((hop_dst >= nodes_before) & (hop_dst < nodes_before + frontier)).all()
            assert np.bincount(hop_dst).max(initial=0) <= fanout
            nodes_before += frontier
            edge_start += batch.num_sampled_edges[hop]
    assert sorted(seen) == graph.split("val").tolist()


def test_batches_reach_torch_without_a_copy(cora_parts):
    loader = _partita.NodeLoader(cora_parts[2], np.arange(100, dtype=np.int64), [5, 5], 25, False, False, 0,
                                 False, False, 2, 60.0, "auto")
    loader.start_epoch(0)
    batch = loader.next()
    for name in ("n_id", "edge_index", "e_id", "x", "y", "input_id"):
        array = batch[name]
        # numpy does not own the memory: the native vector does, kept alive by a capsule.
        assert not array.flags.owndata and type(array.base).__name__ == "PyCapsule", name
        assert array.flags.writeable and array.flags.c_contiguous, name
    pointers = {name: batch[name].ctypes.data for name in ("x", "edge_index", "n_id", "y", "e_id")}
    data = partita.pyg.to_data(batch)
    for name, pointer in pointers.items():
        assert getattr(data, name).data_ptr() == pointer, name
    loader.close()


def test_epochs_reshuffle_replay_and_restart(cora_parts):
    graph = cora_parts[1]
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[5], batch_size=32, input_nodes="train", shuffle=True)
    assert len(loader) == 5
    first, second = epoch(loader), epoch(loader)
    assert loader.epoch == 2
    assert not np.array_equal(first[0]["n_id"][:32], second[0]["n_id"][:32])
    loader.epoch = 0
    assert_same_batches(epoch(loader), first)
    # An iteration left half-way and started again: the new epoch in full; the old iterator refuses.
    old = iter(loader)
    next(old)
    assert len(list(loader)) == 5
    with pytest.raises(RuntimeError, match="superseded"):
        next(old)
    # drop_last drops the smaller last batch; without shuffle the seeds come in order.
    ordered = partita.pyg.NeighborLoader(graph, num_neighbors=[5], batch_size=32, input_nodes="train",
                                         drop_last=True)
    assert len(ordered) == 4
    seeds = np.concatenate([b.n_id[:b.batch_size].numpy() for b in ordered])
    np.testing.assert_array_equal(seeds, graph.split("train")[:128])


def test_input_nodes_as_name_mask_tensor_or_list(cora_parts):
    graph = cora_parts[2]
    train = graph.split("train")
    mask = torch.zeros(graph.num_nodes, dtype=torch.bool)
    mask[torch.from_numpy(train.copy())] = True
    forms = ["train", mask, torch.from_numpy(train.copy()), train.tolist(), train.astype(np.int32)]
    reference = None
    for form in forms:
        loader = partita.pyg.NeighborLoader(graph, num_neighbors=[3], batch_size=40, input_nodes=form, shuffle=True,
                                            seed=5)
        np.testing.assert_array_equal(loader.input_nodes, train)
        batches = epoch(loader)
        if reference is None:
            reference = batches
        assert_same_batches(batches, reference)
    everything = partita.pyg.NeighborLoader(graph, num_neighbors=[2], batch_size=1000)
    assert len(everything) == math.ceil(2708 / 1000)
    assert [b.batch_size for b in everything] == [1000, 1000, 708]
    nothing = partita.pyg.NeighborLoader(graph, num_neighbors=[2], batch_size=4, input_nodes=[])
    assert len(nothing) == 0 and list(nothing) == []


def test_disjoint_batches_have_a_tree_per_seed(cora_parts):
    loader = partita.pyg.NeighborLoader(cora_parts[2], num_neighbors=[4, 2], batch_size=8, input_nodes="test",
                                        disjoint=True)
    batch = next(iter(loader))
    assert batch.batch.shape == (batch.num_nodes,)
    np.testing.assert_array_equal(batch.batch[:8].numpy(), np.arange(8))
    src, dst = batch.edge_index
    assert torch.equal(batch.batch[src], batch.batch[dst])

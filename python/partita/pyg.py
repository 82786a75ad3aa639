"""PyTorch Geometric on Partita's batches.

``NeighborLoader`` takes the arguments of ``torch_geometric.loader.NeighborLoader`` that
apply to a partition folder and yields ``torch_geometric.data.Data`` with the fields PyG's
gives: x, edge_index (row 0 the message source, row 1 the destination; local indices), y,
batch_size, n_id, e_id, input_id, num_sampled_nodes, num_sampled_edges. So a PyG model,
``trim_to_layer`` included, runs on them unchanged.

The batches come from Partita's sampler actors, the pipeline a training job uses, which
samples ahead of the consumer (``prefetch`` batches in flight). The tensors are views of the
sampler's own buffers (``torch.from_numpy`` over arrays the native module hands over without
a copy); a batch's feature buffer goes back to the sampler when its last tensor dies.
"""

import os

import numpy as np
import torch
from torch_geometric.data import Data

from . import Graph, UsageError, _partita
from .stores import FeatureStore, GraphStore, stores  # noqa: F401 (the remote backend: partita/stores.py)

__all__ = ["NeighborLoader"]


class NeighborLoader:
    """Mini-batches of `input_nodes` and their sampled neighbourhoods.

    data: a partita.Graph (or a partition folder's path).
    num_neighbors: neighbours sampled per node at each hop, e.g. [25, 10]; -1 takes all.
    input_nodes: the seeds: None (every node), a split name ("train", "val", "test"), a bool
        mask over the nodes, or node ids (a tensor, array or list), in the dataset's own ids.
    batch_size, shuffle, drop_last: as PyG's loader.
    seed: the epochs' shuffles and neighbour draws: epoch e of a loader with seed s gives the
        same batches every time, whatever the number of partitions.
    replace, disjoint: as PyG's (with replacement; one tree per seed, ``batch`` set).
    prefetch: batches the sampler builds ahead of the consumer.
    timeout: seconds to wait for a batch before raising.

    Each iteration is one epoch (``epoch`` counts them; set it to replay one); an iteration
    started again begins a new epoch. Requires ``partita.init()``.
    """

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size=1, shuffle=False, drop_last=False,
                 seed=0, replace=False, disjoint=False, prefetch=2, timeout=60.0, features="auto", **kwargs):
        if kwargs:
            raise TypeError(f"NeighborLoader: unsupported arguments: {', '.join(sorted(kwargs))} "
                            f"(the sampler actors do the loading; there are no worker processes)")
        if isinstance(data, (str, os.PathLike)):
            data = Graph(os.fspath(data))
        if not isinstance(data, Graph):
            raise TypeError(f"NeighborLoader: data must be a partita.Graph or a partition folder's path, "
                            f"not {type(data).__name__} (write a Data with partita.partition first)")
        if isinstance(num_neighbors, dict):
            raise TypeError("NeighborLoader: num_neighbors as a dict is for heterogeneous graphs; give a list")
        if not isinstance(num_neighbors, (list, tuple)) or not all(_is_int(k) for k in num_neighbors):
            raise TypeError(f"NeighborLoader: num_neighbors must be a list of ints, not {num_neighbors!r}")
        for name, value in (("batch_size", batch_size), ("seed", seed), ("prefetch", prefetch)):
            if not _is_int(value):
                raise TypeError(f"NeighborLoader: {name} must be an int, not {type(value).__name__}")
        if seed < 0:
            raise UsageError(f"NeighborLoader: seed {seed} (must be 0 or more)")
        self.data = data
        self.input_nodes = _input_ids(data, input_nodes)
        self.batch_size = int(batch_size)
        self.epoch = 0
        self._epochs_started = 0
        self._loader = _partita.NodeLoader(data, self.input_nodes, [int(k) for k in num_neighbors], self.batch_size,
                                           bool(shuffle), bool(drop_last), int(seed), bool(replace), bool(disjoint),
                                           int(prefetch), float(timeout), str(features))

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        self._loader.start_epoch(self.epoch)
        self.epoch += 1
        self._epochs_started += 1
        return _Epoch(self, self._epochs_started)

    def close(self):
        """Stops this loader's actors; iterating afterwards raises partita.Error."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"NeighborLoader({len(self.input_nodes)} input nodes, batch_size={self.batch_size}, {len(self)} batches)"


class _Epoch:
    """One iteration over a loader: its epoch's batches, in plan order."""

    def __init__(self, loader, number):
        self._loader = loader
        self._number = number
        self._left = len(loader)

    def __iter__(self):
        return self

    def __next__(self):
        if self._left == 0:
            raise StopIteration
        if self._loader._epochs_started != self._number:
            raise RuntimeError("NeighborLoader: this iteration was superseded by a newer one over the same loader")
        batch = self._loader._loader.next()  # an error leaves the count as it was
        self._left -= 1
        return to_data(batch)

    def __len__(self):
        return self._left


def to_data(batch):
    """A batch of the native module (a dict of numpy arrays) as a PyG Data, every tensor over
    the batch's own memory (torch.from_numpy: no copy)."""
    n_id = torch.from_numpy(batch["n_id"])
    data = Data(
        x=None if batch["x"] is None else torch.from_numpy(batch["x"]),
        edge_index=torch.from_numpy(batch["edge_index"]),
        y=None if batch["y"] is None else torch.from_numpy(batch["y"]),
        n_id=n_id,
        e_id=torch.from_numpy(batch["e_id"]),
        input_id=torch.from_numpy(batch["input_id"]),
        batch_size=int(batch["batch_size"]),
        num_sampled_nodes=list(batch["num_sampled_nodes"]),
        num_sampled_edges=list(batch["num_sampled_edges"]),
    )
    if batch["batch"] is not None:
        data.batch = torch.from_numpy(batch["batch"])
    data.num_nodes = n_id.numel()
    return data


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _input_ids(graph, input_nodes):
    """The seeds as an int64 array of original ids; TypeError or UsageError naming the problem."""
    if input_nodes is None:
        return np.arange(graph.num_nodes, dtype=np.int64)
    if isinstance(input_nodes, str):
        return np.array(graph.split(input_nodes), dtype=np.int64)
    if isinstance(input_nodes, tuple):
        raise TypeError("NeighborLoader: input_nodes as (node type, nodes) is for heterogeneous graphs")
    if isinstance(input_nodes, torch.Tensor):
        input_nodes = input_nodes.detach().cpu().numpy()
    elif isinstance(input_nodes, (list, range)):
        if not all(_is_int(v) or isinstance(v, (bool, np.bool_)) for v in input_nodes):
            raise TypeError("NeighborLoader: input_nodes as a list must hold node ids (ints) or a mask (bools)")
        input_nodes = np.asarray(input_nodes)
        if input_nodes.size == 0:
            input_nodes = input_nodes.astype(np.int64)
    if not isinstance(input_nodes, np.ndarray):
        raise TypeError(f"NeighborLoader: input_nodes must be None, a split name, a mask or node ids, "
                        f"not {type(input_nodes).__name__}")
    if input_nodes.ndim != 1:
        raise UsageError(f"NeighborLoader: input_nodes must be one-dimensional, not of shape {input_nodes.shape}")
    if input_nodes.dtype == np.bool_:
        if input_nodes.shape[0] != graph.num_nodes:
            raise UsageError(f"NeighborLoader: input_nodes is a mask of {input_nodes.shape[0]} entries; "
                             f"the graph has {graph.num_nodes} nodes")
        return np.flatnonzero(input_nodes).astype(np.int64)
    if not np.issubdtype(input_nodes.dtype, np.integer):
        raise TypeError(f"NeighborLoader: input_nodes must hold integer node ids or bools, not {input_nodes.dtype}")
    return np.ascontiguousarray(input_nodes, dtype=np.int64)

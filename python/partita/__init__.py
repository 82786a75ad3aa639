"""Partita in a Python process.

The runtime runs inside this process (``partita.init()``, as ``partita run`` runs a job):
partition and sampler actors build mini-batches from a partition folder, and
``partita.pyg.NeighborLoader`` hands them to PyTorch Geometric models as
``torch_geometric.data.Data``::

    import partita, partita.pyg
    partita.init()
    graph = partita.partition(data, "parts", num_parts=2)   # or partita.Graph("parts")
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[25, 10], batch_size=32,
                                        input_nodes="train", shuffle=True)

Node ids are the dataset's own (``data``'s row numbers), whatever the number of parts.
Data-parallel training over several processes (``partita.init_process_group``,
``partita.average_gradients``, ``partita.allreduce_``): see ``partita.distributed``.

A script run as a Python job on a cluster (``partita submit --address HEAD -- python3
train.py``) finds its rank, world size and head in its environment (``partita.init()``
connects to the job's head, ``partita.init_process_group()`` joins the job's group), and
keeps what it must resume from in ``partita.checkpoint_dir()`` (``save_checkpoint``,
``load_checkpoint``): a job restarted after a lost node finds it there.

Errors are ``partita.Error`` (a RuntimeError), ``partita.UsageError`` (also a ValueError:
a bad argument, a node id outside the graph) and ``partita.RuntimeClosedError`` (the
runtime is not running).
"""

import atexit
import os
import tempfile

import numpy as np

from . import _partita
from ._partita import Error, Graph, RuntimeClosedError, UsageError
from . import distributed
from .distributed import (allreduce_, average_gradients, destroy_process_group, get_rank, get_world_size,
                          init_process_group)

__all__ = ["Error", "Graph", "RuntimeClosedError", "UsageError", "allreduce_", "average_gradients",
           "destroy_process_group", "distributed", "get_rank", "get_world_size", "init", "init_process_group",
           "is_running", "nodes", "partition", "shutdown", "checkpoint_dir", "save_checkpoint", "load_checkpoint"]


def init(address=None, *, tls_dir=None, threads=0, log_level="warning", timeout=10.0):
    """Starts the runtime, on `threads` scheduler threads (0: all cores).

    Without `address`, every actor runs in this process, as with ``partita run``. With a
    cluster's head, ``address="HOST:PORT"``, the loaders' actors run on the cluster's live
    nodes (partition p on node p mod the number of nodes, as a submitted job's), reached
    over mutual TLS with the credentials in `tls_dir` (default: $PARTITA_TLS_DIR or
    ~/.partita/tls); a partition folder must then be at the same path on every node.
    This process then runs actors on the nodes, as a member of the cluster: its certificate
    must be a node's (``partita cluster cert NAME --role node``); a user's is refused with
    an Error that says so. Logs below `log_level` ("trace" ... "error", "off") are dropped. Raises UsageError when
    it is running already, Error when the head or a node does not answer within `timeout`
    seconds.

    In a Python job's process ($PARTITA_JOB set: ``partita submit -- python3 SCRIPT``),
    `address` defaults to the job's head, $PARTITA_ADDRESS, and `tls_dir` to the node's
    credentials ($PARTITA_TLS_DIR, set by the node that runs the process)."""
    if address is None and os.environ.get("PARTITA_JOB"):
        address = os.environ.get("PARTITA_ADDRESS") or None
    if not isinstance(threads, int) or isinstance(threads, bool):
        raise TypeError(f"partita.init(): threads must be an int, not {type(threads).__name__}")
    if address is not None and not isinstance(address, str):
        raise TypeError(f"partita.init(): address must be 'HOST:PORT', not {type(address).__name__}")
    _partita.init(threads, log_level, address or "", os.fspath(tls_dir) if tls_dir else "", float(timeout))


def shutdown():
    """Stops the runtime: every loader is closed (their later calls raise
    RuntimeClosedError), then every actor. Does nothing when it is not running; runs by
    itself at the interpreter's exit."""
    _partita.shutdown()


def is_running():
    return _partita.is_running()


def nodes():
    """Where the loaders' actors run: ["in-process"], or the cluster nodes' addresses."""
    return _partita.nodes()


atexit.register(_partita.shutdown)


def checkpoint_dir():
    """The folder a script keeps what it resumes from, created if missing.

    In a Python job: $PARTITA_CHECKPOINT_DIR, the job's own folder (RUNS/ID/checkpoints on
    the head's machine), the same for every rank and every restart of the job: a job
    restarted after a lost node, or continued with ``partita job resume``, finds there what
    its last attempt saved. Outside a job: ``partita-checkpoints`` in the working folder."""
    folder = os.environ.get("PARTITA_CHECKPOINT_DIR") or os.path.join(os.getcwd(), "partita-checkpoints")
    os.makedirs(folder, exist_ok=True)
    return folder


def save_checkpoint(state, name="checkpoint.pt"):
    """Saves `state` (anything ``torch.save`` takes) as `name` in checkpoint_dir(), whole
    or not at all: it is written beside, flushed to disk, then renamed over the last one, so
    a process killed meanwhile leaves the previous checkpoint. Every rank of a
    data-parallel job holds the same parameters: one rank (rank 0) saves. Returns the path."""
    import torch
    if not isinstance(name, str) or not name or os.sep in name or name in (".", ".."):
        raise UsageError(f"save_checkpoint: name must be a file name, not {name!r}")
    path = os.path.join(checkpoint_dir(), name)
    partial = f"{path}.partial-{os.getpid()}"
    with open(partial, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)
    return path


def load_checkpoint(name="checkpoint.pt"):
    """What save_checkpoint last saved as `name`, or None when nothing was saved yet."""
    import torch
    if not isinstance(name, str) or not name or os.sep in name or name in (".", ".."):
        raise UsageError(f"load_checkpoint: name must be a file name, not {name!r}")
    path = os.path.join(checkpoint_dir(), name)
    if not os.path.exists(path):
        return None
    return torch.load(path)


def partition(source, output, num_parts=2, *, format=None, method="metis", seed=0, split_seed=0,
              overwrite=False, balance_train=True, transforms=(), threads=0, holdout=None):
    """Partitions a dataset into the partition folder `output` (as ``partita partition``
    does) and returns it opened as a Graph.

    `source` is a PyTorch Geometric ``Data`` (edge_index, and x, y, train_mask, val_mask,
    test_mask where present; node ids are its rows), a ``HeteroData`` (the same fields per
    node and edge type, each type's x of its own width; its nodes numbered as
    ``HeteroData.to_homogeneous()`` numbers them, and ``NeighborLoader(..., hetero=True)``
    hands back each type's own rows), or a path: an npy folder (x.npy,
    edge_index.npy, y.npy, train_idx.npy, ...; `format` "npy", the default) or another
    format ``partita partition`` reads ("linqs", "edgelist", "triples", "movielens", "movielens100k",
    "ntriples"). An existing `output` is replaced only with `overwrite`.

    `holdout={"val": 0.05, "test": 0.1}` holds out those fractions of the links for link
    prediction (drawn with `split_seed`, before partitioning, as PyG's RandomLinkSplit): the
    graph keeps none of them in either direction, and LinkNeighborLoader reads them as
    ``edge_label_index="val"`` and ``"test"``. As a job's ``data.holdout``, it may also say
    ``"by": "time"`` (a time split: the latest links by edge time are the test links, the
    ones before them the validation links), with ``"history": "keep"`` (a streaming split:
    the held-out links stay in the graph, as history for the seeds after them; temporal
    sampling takes edges at or before a seed's time, as PyG's does, so a held-out link's
    time less one as its edge_label_time keeps the link out of its own neighbourhood), and
    ``"edge_type": (src, relation, dst)``: only that edge type's links are held out. In a
    HeteroData, an edge type ``(d, "rev_" + r, s)`` is the reverse of ``(s, r, d)``, as
    ``ToUndirected`` names it: a held-out link leaves both. A Data's ``time`` of one entry
    per edge becomes the edge times (one per node: the node times) that temporal sampling
    reads."""
    output = os.fspath(output)
    holdout = _holdout(holdout)
    if isinstance(source, (str, os.PathLike)):
        return _partition_path(os.fspath(source), format or "npy", output, num_parts, method, seed, split_seed,
                               overwrite, balance_train, transforms, threads, holdout)
    if format not in (None, "npy"):
        raise UsageError(f"partita.partition: format {format!r} is for a path; a Data object is written as npy")
    if not hasattr(source, "edge_index") and not _is_hetero_data(source):
        raise TypeError(f"partita.partition: source must be a torch_geometric.data.Data or a path, "
                        f"not {type(source).__name__}")
    with tempfile.TemporaryDirectory(prefix="partita-npy-") as folder:
        if _is_hetero_data(source):
            _write_hetero_npy_folder(source, folder)
        else:
            _write_npy_folder(source, folder)
        return _partition_path(folder, "npy", output, num_parts, method, seed, split_seed, overwrite,
                               balance_train, transforms, threads, holdout)


_HOLDOUT_EXAMPLE = "{'val': 0.05, 'test': 0.1}"


def _holdout(holdout):
    """The holdout argument checked, as the keyword arguments of _partita.partition;
    TypeError or UsageError naming the problem."""
    out = {"holdout_val": 0.0, "holdout_test": 0.0, "holdout_by_time": False, "holdout_keep_history": False,
           "holdout_edge_type": []}
    if holdout is None:
        return out
    if not isinstance(holdout, dict):
        raise TypeError(f"partita.partition: holdout must be a dict such as {_HOLDOUT_EXAMPLE}, "
                        f"not {type(holdout).__name__}")
    unknown = set(holdout) - {"val", "test", "by", "history", "edge_type"}
    if unknown:
        raise UsageError(f"partita.partition: holdout: unknown keys {sorted(unknown)} (val and test are the "
                         f"fractions; by, history and edge_type say how links are held out)")
    for key in ("val", "test"):
        value = holdout.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"partita.partition: holdout[{key!r}] must be a fraction, not {type(value).__name__}")
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"partita.partition: holdout[{key!r}] is {value} (must be in [0, 1])")
        out[f"holdout_{key}"] = float(value)
    by = holdout.get("by", "random")
    if by not in ("random", "time"):
        raise UsageError(f"partita.partition: holdout['by'] is {by!r} (expected 'random' or 'time')")
    out["holdout_by_time"] = by == "time"
    history = holdout.get("history", "drop")
    if history not in ("drop", "keep"):
        raise UsageError(f"partita.partition: holdout['history'] is {history!r} (expected 'drop' or 'keep')")
    if history == "keep" and by != "time":
        raise UsageError("partita.partition: holdout['history'] = 'keep' is a streaming time split: it needs "
                         "holdout['by'] = 'time'")
    out["holdout_keep_history"] = history == "keep"
    edge_type = holdout.get("edge_type")
    if edge_type is not None:
        if (not isinstance(edge_type, (tuple, list)) or len(edge_type) != 3
                or not all(isinstance(name, str) for name in edge_type)):
            raise TypeError(f"partita.partition: holdout['edge_type'] must be (source type, relation, "
                            f"destination type), not {edge_type!r}")
        out["holdout_edge_type"] = list(edge_type)
    return out


def _partition_path(path, format, output, num_parts, method, seed, split_seed, overwrite, balance_train,
                    transforms, threads, holdout):
    if isinstance(transforms, str):
        transforms = [transforms]
    _partita.partition(path, format, output, int(num_parts), method, int(seed), int(split_seed), bool(overwrite),
                       bool(balance_train), list(transforms), int(threads), **holdout)
    return Graph(output)


def _numpy(value, name):
    """A tensor or array attribute of a Data as numpy (no copy for CPU tensors)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise TypeError(f"partita.partition: data.{name} must be a tensor or an array, not {type(value).__name__}")
    return value


def _write_npy_folder(data, folder):
    """`data` as the npy folder read_npy_folder reads (partitioner/readers.h)."""
    edge_index = _numpy(data.edge_index, "edge_index")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise UsageError(f"partita.partition: data.edge_index has shape {tuple(edge_index.shape)}, expected (2, E)")
    if not np.issubdtype(edge_index.dtype, np.integer):
        raise UsageError(f"partita.partition: data.edge_index has dtype {edge_index.dtype}, expected integers")
    np.save(os.path.join(folder, "edge_index.npy"), np.ascontiguousarray(edge_index, dtype=np.int64))
    x = getattr(data, "x", None)
    if x is not None:
        x = _numpy(x, "x")
        if x.ndim != 2:
            raise UsageError(f"partita.partition: data.x has shape {tuple(x.shape)}, expected (num_nodes, features)")
        np.save(os.path.join(folder, "x.npy"), np.ascontiguousarray(x, dtype=np.float32))
    y = getattr(data, "y", None)
    if y is not None:
        y = _numpy(y, "y")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
            raise UsageError(f"partita.partition: data.y must hold one integer class per node, "
                             f"not shape {tuple(y.shape)} of {y.dtype}")
        np.save(os.path.join(folder, "y.npy"), np.ascontiguousarray(y, dtype=np.int64))
    time = getattr(data, "time", None)
    if time is not None:
        time = _numpy(time, "time")
        if time.ndim != 1 or not np.issubdtype(time.dtype, np.integer):
            raise UsageError(f"partita.partition: data.time must hold one integer time per edge or per node, "
                             f"not shape {tuple(time.shape)} of {time.dtype}")
        if time.shape[0] == edge_index.shape[1]:
            np.save(os.path.join(folder, "edge_time.npy"), np.ascontiguousarray(time, dtype=np.int64))
        elif time.shape[0] == getattr(data, "num_nodes", None):
            np.save(os.path.join(folder, "node_time.npy"), np.ascontiguousarray(time, dtype=np.int64))
        else:
            raise UsageError(f"partita.partition: data.time has {time.shape[0]} entries: neither one per edge "
                             f"({edge_index.shape[1]}) nor one per node")
    for split in ("train", "val", "test"):
        mask = getattr(data, f"{split}_mask", None)
        if mask is None:
            continue
        mask = _numpy(mask, f"{split}_mask")
        if mask.dtype != np.bool_ or mask.ndim != 1:
            raise UsageError(f"partita.partition: data.{split}_mask must be a one-dimensional bool mask")
        np.save(os.path.join(folder, f"{split}_idx.npy"), mask)


def _is_hetero_data(source):
    return hasattr(source, "node_types") and hasattr(source, "edge_types") and hasattr(source, "edge_index_dict")


def _write_hetero_npy_folder(data, folder):
    """A HeteroData as an npy folder with node_type, edge_type and types.json, laid out as
    HeteroData.to_homogeneous() lays it out: each node type's rows as one block, in the
    order of data.node_types, each edge type's edges likewise, in the order of data.edge_types."""
    import json
    node_types, edge_types = list(data.node_types), list(data.edge_types)
    if not node_types:
        raise UsageError("partita.partition: the HeteroData has no node types")
    counts = [int(data[t].num_nodes or 0) for t in node_types]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    np.save(os.path.join(folder, "node_type.npy"),
            np.repeat(np.arange(len(node_types), dtype=np.int32), counts))

    def per_type(stores, name, what):
        """Each store's `name` as numpy, None where absent; all None or none."""
        values = [getattr(s, name, None) if name in s else None for s in stores]
        if all(v is None for v in values):
            return None
        missing = [w for w, v in zip(what, values) if v is None]
        if missing and name != "y" and not name.endswith("_mask"):
            raise UsageError(f"partita.partition: the HeteroData has {name} for some types but not for "
                             f"{', '.join(map(repr, missing))}: give every type one, or none")
        return [None if v is None else _numpy(v, f"[{w!r}].{name}") for w, v in zip(what, values)]

    node_stores = [data[t] for t in node_types]
    edge_stores = [data[t] for t in edge_types]
    index, types = [], []
    for k, (t, store) in enumerate(zip(edge_types, edge_stores)):
        edges = _numpy(store.edge_index, f"[{t!r}].edge_index")
        if edges.ndim != 2 or edges.shape[0] != 2 or not np.issubdtype(edges.dtype, np.integer):
            raise UsageError(f"partita.partition: data[{t!r}].edge_index must be integers of shape (2, E), "
                             f"not {edges.dtype} of shape {tuple(edges.shape)}")
        src, dst = node_types.index(t[0]), node_types.index(t[-1])
        for row, end, name in ((0, src, "source"), (1, dst, "destination")):
            if edges.shape[1] and (edges[row].min() < 0 or edges[row].max() >= counts[end]):
                raise UsageError(f"partita.partition: data[{t!r}].edge_index[{row}] holds a {name} outside "
                                 f"the {counts[end]} nodes of type {node_types[end]!r}")
        index.append(edges.astype(np.int64) + offsets[[src, dst]][:, None])
        types.append(np.full(edges.shape[1], k, dtype=np.int32))
    edge_index = np.concatenate(index, axis=1) if index else np.zeros((2, 0), dtype=np.int64)
    np.save(os.path.join(folder, "edge_index.npy"), np.ascontiguousarray(edge_index))
    np.save(os.path.join(folder, "edge_type.npy"), np.concatenate(types) if types else np.zeros(0, np.int32))

    x = per_type(node_stores, "x", node_types)
    feature_dims = {}
    if x is not None:
        for t, v in zip(node_types, x):
            if v.ndim != 2:
                raise UsageError(f"partita.partition: data[{t!r}].x has shape {tuple(v.shape)}, expected "
                                 f"(num_nodes, features)")
        widths = [v.shape[1] for v in x]
        if len(set(widths)) == 1:
            np.save(os.path.join(folder, "x.npy"), np.ascontiguousarray(np.concatenate(x), dtype=np.float32))
        else:  # one x of the widest width, each type's features its leading columns
            padded = np.zeros((sum(counts), max(widths)), dtype=np.float32)
            for k, v in enumerate(x):
                padded[offsets[k]:offsets[k + 1], :widths[k]] = v
            np.save(os.path.join(folder, "x.npy"), padded)
            feature_dims = {"feature_dims": widths}
    y = per_type(node_stores, "y", node_types)
    if y is not None:
        rows = []
        for t, v, n in zip(node_types, y, counts):
            if v is None:
                v = np.full(n, -1, dtype=np.int64)
            if v.ndim != 1 or not np.issubdtype(v.dtype, np.integer):
                raise UsageError(f"partita.partition: data[{t!r}].y must hold one integer class per node "
                                 f"(-1: none), not shape {tuple(v.shape)} of {v.dtype}")
            rows.append(v.astype(np.int64))
        np.save(os.path.join(folder, "y.npy"), np.concatenate(rows))
    for name, stores, what, file in (("time", edge_stores, edge_types, "edge_time.npy"),
                                     ("time", node_stores, node_types, "node_time.npy")):
        times = per_type(stores, name, what)
        if times is not None:
            np.save(os.path.join(folder, file), np.concatenate(times).astype(np.int64))
    for split in ("train", "val", "test"):
        masks = per_type(node_stores, f"{split}_mask", node_types)
        if masks is None:
            continue
        for k, m in enumerate(masks):
            if m is not None and (m.dtype != np.bool_ or m.shape != (counts[k],)):
                raise UsageError(f"partita.partition: data[{node_types[k]!r}].{split}_mask must be a bool mask "
                                 f"of its {counts[k]} nodes, not {m.dtype} of shape {tuple(m.shape)}")
        ids = [np.flatnonzero(m) + offsets[k] for k, m in enumerate(masks) if m is not None]
        np.save(os.path.join(folder, f"{split}_idx.npy"), np.concatenate(ids).astype(np.int64))
    # ToUndirected names the reverse of (s, r, d) (d, "rev_" + r, s): a held-out link leaves both.
    reverse = [-1] * len(edge_types)
    for k, (s, r, d) in enumerate(edge_types):
        if (d, f"rev_{r}", s) in edge_types:
            reverse[k] = edge_types.index((d, f"rev_{r}", s))
            reverse[reverse[k]] = k
    with open(os.path.join(folder, "types.json"), "w") as f:
        json.dump({"node_types": node_types, "edge_types": [list(t) for t in edge_types], **feature_dims,
                   **({"reverse_edge_types": reverse} if any(r >= 0 for r in reverse) else {})}, f)

"""PyTorch Geometric on Partita's batches.

``NeighborLoader`` takes the arguments of ``torch_geometric.loader.NeighborLoader`` that
apply to a partition folder and yields ``torch_geometric.data.Data`` with the fields PyG's
gives: x, edge_index (row 0 the message source, row 1 the destination; local indices), y,
batch_size, n_id, e_id, input_id, num_sampled_nodes, num_sampled_edges. So a PyG model,
``trim_to_layer`` included, runs on them unchanged. ``LinkNeighborLoader`` does the same for
edges, with PyG's negative sampling ("binary": edge_label_index and edge_label; "triplet":
src_index, dst_pos_index, dst_neg_index) and temporal sampling (edge_label_time).

On a heterogeneous partition folder both loaders yield, with ``hetero=True``, the
``torch_geometric.data.HeteroData`` PyG's own loaders yield on a HeteroData: per node type
x, y, n_id (the node's row in its type, as in the user's HeteroData), num_sampled_nodes,
and batch_size and input_id on the input type; per edge type edge_index (rows of the two
node stores), e_id (the edge's row in its type) and num_sampled_edges. Without it they
yield the layout of ``HeteroData.to_homogeneous()`` (node_type, edge_type, n_id over all
types), which relational models such as RGCNConv take.

The batches come from Partita's sampler actors, the pipeline a training job uses, which
samples ahead of the consumer (``prefetch`` batches in flight). The tensors are views of the
sampler's own buffers (``torch.from_numpy`` over arrays the native module hands over without
a copy); a batch's feature buffer goes back to the sampler when its last tensor dies.
"""

import os

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from . import Graph, UsageError, _partita
from .stores import FeatureStore, GraphStore, stores  # noqa: F401 (the remote backend: partita/stores.py)

__all__ = ["FeatureStore", "GraphStore", "LinkNeighborLoader", "NeighborLoader", "stores"]


class _Loader:
    """What both loaders are to Python: an iterable of epochs over a native loader
    (`_loader`), each iteration the next epoch (`epoch` counts them; set it to replay one),
    each batch made a Data by `_to_data`, and a context that closes it."""

    def __init__(self):
        self.epoch = 0
        self._epochs_started = 0

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


class NeighborLoader(_Loader):
    """Mini-batches of `input_nodes` and their sampled neighbourhoods.

    data: a partita.Graph (or a partition folder's path).
    num_neighbors: neighbours sampled per node at each hop, e.g. [25, 10]; -1 takes all.
    input_nodes: the seeds: None (every node), a split name ("train", "val", "test"), a bool
        mask over the nodes, or node ids (a tensor, array or list), in the dataset's own ids.
        With hetero=True, as PyG's on a HeteroData: a node type (all its nodes) or (node
        type, nodes), the nodes None, a split name, a mask over the type's nodes or rows of
        the type; a split name alone when its nodes are all of one type.
    hetero: on a heterogeneous graph, yield HeteroData (batch[node type].x, .n_id, ...;
        the module's docstring) instead of the to_homogeneous() layout. Not the default:
        the folder numbers every type's nodes in one range, and scripts written against
        that layout (and relational models, which take it) keep working; a HeteroConv or
        to_hetero() model asks for hetero=True.
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
                 seed=0, replace=False, disjoint=False, prefetch=2, timeout=60.0, features="auto", hetero=False,
                 **kwargs):
        if kwargs:
            raise TypeError(f"NeighborLoader: unsupported arguments: {', '.join(sorted(kwargs))} "
                            f"(the sampler actors do the loading; there are no worker processes)")
        data = _graph_of(data, "NeighborLoader")
        fanouts = _fanouts(num_neighbors, "NeighborLoader")
        for name, value in (("batch_size", batch_size), ("seed", seed), ("prefetch", prefetch)):
            if not _is_int(value):
                raise TypeError(f"NeighborLoader: {name} must be an int, not {type(value).__name__}")
        if seed < 0:
            raise UsageError(f"NeighborLoader: seed {seed} (must be 0 or more)")
        self.data = data
        self._types = _hetero_index(data, hetero, "NeighborLoader")
        if self._types is None:
            self.input_type = None
            self.input_nodes = _input_ids(data, input_nodes)
        else:
            self.input_type, self.input_nodes = self._types.input_nodes(input_nodes)
        self.batch_size = int(batch_size)
        super().__init__()
        self._loader = _partita.NodeLoader(data, self.input_nodes, fanouts, self.batch_size,
                                           bool(shuffle), bool(drop_last), int(seed), bool(replace), bool(disjoint),
                                           int(prefetch), float(timeout), str(features))

    def _to_data(self, batch):
        if self._types is None:
            return to_data(batch)
        data, _ = self._types.to_hetero_data(batch)
        data[self.input_type].input_id = torch.from_numpy(batch["input_id"])
        data[self.input_type].batch_size = int(batch["batch_size"])
        return data

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
            raise RuntimeError(f"{type(self._loader).__name__}: this iteration was superseded by a newer one over "
                               f"the same loader")
        batch = self._loader._loader.next()  # an error leaves the count as it was
        self._left -= 1
        return self._loader._to_data(batch)

    def __len__(self):
        return self._left


class LinkNeighborLoader(_Loader):
    """Mini-batches of edges (`edge_label_index`), their negatives and the sampled
    neighbourhoods of their ends, as PyG's LinkNeighborLoader yields them.

    data: a partita.Graph (or a partition folder's path).
    num_neighbors, batch_size (edges per batch), shuffle, drop_last, replace, disjoint,
        prefetch, timeout, features: as NeighborLoader's.
    edge_label_index: the edges, in the dataset's own node ids: None (the folder's training
        edges: every edge of the graph), a split name ("train", "val", "test": the edges
        partita.partition held out with `holdout`), or a [2, num_edges] tensor or array.
        On a heterogeneous graph, (edge type, edges) with the edge type one of
        ``graph.edge_types`` (source type, relation, destination type) and the edges as
        above, of that type alone (a tensor's in the dataset's own ids, which number every
        type's nodes in one range, as n_id does: each source of the source type, each
        destination of the destination type; with hetero=True, rows of the source type and
        of the destination type, as PyG's); an edge type alone is (edge type, None).
    edge_label: one label per edge (a tensor), or None. With binary negatives, positives get
        edge_label (plus one when its smallest label is 0, as PyG does) or 1, negatives 0.
    edge_label_time: one time per edge: temporal sampling, each end sees the edges at or
        before its edge's time (needs time_attr and disjoint=True, as PyG's). A split name
        brings its own times when the folder has them.
    neg_sampling: None, "binary", "triplet", a dict {"mode": ..., "amount": ...} or PyG's
        NegativeSampling; neg_sampling_ratio: PyG's older spelling of binary's amount.
        Negatives are drawn uniformly over all nodes, keyed by (seed, epoch, batch); on a
        heterogeneous graph a negative source over the source type's nodes and a negative
        destination over the destination type's, as PyG's.
    time_attr: "time" turns temporal sampling on (the folder's edge times);
        temporal_strategy "uniform" or "last".
    seed: the shuffles, negatives and neighbour draws: epoch e gives the same batches every
        time, whatever the number of partitions.

    Each batch's seeds are its edges' ends, each node once unless disjoint, in the order
    sources then destinations (PyG sorts them instead: the same nodes, in another order).

    hetero=True: HeteroData batches, as PyG's on a HeteroData (see NeighborLoader): the
    edge type's store holds input_id, edge_label_index (rows of the source and destination
    types' stores), edge_label and edge_label_time; triplets put src_index on the source
    type and dst_pos_index, dst_neg_index on the destination type, seed_time on both.

    Otherwise a heterogeneous graph's batches are Data in the layout of HeteroData.to_homogeneous(),
    as NeighborLoader's: node_type and edge_type index ``graph.node_types`` and
    ``graph.edge_types``, the neighbourhoods span every edge type, and edge_label_index
    (or src_index, dst_pos_index, dst_neg_index) holds positions in the batch's nodes.
    ``edge_type`` is the loader's edge type (None on a homogeneous graph).
    """

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, edge_label_time=None,
                 batch_size=1, shuffle=False, drop_last=False, neg_sampling=None, neg_sampling_ratio=None,
                 time_attr=None, temporal_strategy="uniform", seed=0, replace=False, disjoint=False, prefetch=2,
                 timeout=60.0, features="auto", hetero=False, **kwargs):
        if kwargs:
            raise TypeError(f"LinkNeighborLoader: unsupported arguments: {', '.join(sorted(kwargs))} "
                            f"(the sampler actors do the loading; there are no worker processes)")
        data = _graph_of(data, "LinkNeighborLoader")
        fanouts = _fanouts(num_neighbors, "LinkNeighborLoader")
        for name, value in (("batch_size", batch_size), ("seed", seed), ("prefetch", prefetch)):
            if not _is_int(value):
                raise TypeError(f"LinkNeighborLoader: {name} must be an int, not {type(value).__name__}")
        if seed < 0:
            raise UsageError(f"LinkNeighborLoader: seed {seed} (must be 0 or more)")
        mode, amount = _negative_sampling(neg_sampling, neg_sampling_ratio)
        self._types = _hetero_index(data, hetero, "LinkNeighborLoader")
        edge_type, src, dst, split_time = _label_edges(data, edge_label_index, self._types)
        if time_attr is not None and time_attr != "time":
            raise UsageError(f"LinkNeighborLoader: time_attr {time_attr!r}: a partition folder's edge times are "
                             f"its 'time'")
        if edge_label_time is None and time_attr is not None:
            edge_label_time = split_time
            if edge_label_time is None:
                raise UsageError("LinkNeighborLoader: time_attr='time' (temporal sampling) needs edge_label_time, "
                                 "one time per edge")
        if edge_label_time is not None:
            if time_attr is None:
                raise UsageError("LinkNeighborLoader: edge_label_time needs time_attr='time' (temporal sampling)")
            edge_label_time = _int_array(edge_label_time, "edge_label_time", len(src))
        self.edge_label = None
        if edge_label is not None:
            if mode == "triplet":
                raise UsageError("LinkNeighborLoader: edge_label must be None for triplet negative sampling")
            if not isinstance(edge_label, torch.Tensor):
                edge_label = torch.as_tensor(np.asarray(edge_label))
            if edge_label.dim() == 0 or edge_label.size(0) != len(src):
                raise UsageError(f"LinkNeighborLoader: edge_label has shape {tuple(edge_label.shape)}; "
                                 f"expected one label per edge ({len(src)})")
            if mode == "binary" and edge_label.numel() > 0 and edge_label.min() == 0:
                edge_label = edge_label + 1
            self.edge_label = edge_label
        self.data = data
        self.edge_type = None if edge_type < 0 else data.edge_types[edge_type]
        self.neg_sampling = mode
        self.disjoint = bool(disjoint)
        self.edge_label_time = None if edge_label_time is None else torch.from_numpy(edge_label_time)
        self.batch_size = int(batch_size)
        super().__init__()
        self._loader = _partita.LinkLoader(data, src, dst, edge_label_time, fanouts, self.batch_size,
                                           bool(shuffle), bool(drop_last), int(seed), bool(replace), bool(disjoint),
                                           int(prefetch), float(timeout), str(features), mode or "none",
                                           float(amount), str(temporal_strategy), edge_type)

    def __repr__(self):
        return f"LinkNeighborLoader({self._loader.num_edges} edges, batch_size={self.batch_size}, {len(self)} batches)"

    def _to_data(self, batch):
        if self._types is not None:
            return self._to_hetero_data(batch)
        data = to_data(batch)
        del data.batch_size  # PyG's link batches have none
        positives = int(batch["num_positives"])
        input_id = data.input_id
        src_index = torch.from_numpy(batch["src_index"])
        dst_index = torch.from_numpy(batch["dst_index"])
        if self.disjoint:
            data.batch = data.batch % positives
        if self.neg_sampling == "triplet":
            data.src_index = src_index
            data.dst_pos_index = dst_index
            dst_neg = torch.from_numpy(batch["dst_neg_index"])
            data.dst_neg_index = dst_neg.squeeze(-1) if dst_neg.size(1) == 1 else dst_neg
            if batch["seed_time"] is not None:
                data.seed_time = torch.from_numpy(batch["seed_time"])
            return data
        data.edge_label_index = torch.stack([src_index, dst_index])
        pairs = src_index.numel()
        if self.edge_label is not None:
            label = self.edge_label[input_id]
        elif self.neg_sampling == "binary":
            label = torch.ones(positives)
        else:
            label = None
        if label is not None and pairs > positives:
            label = torch.cat([label, label.new_zeros((pairs - positives,) + tuple(label.shape[1:]))])
        data.edge_label = label
        if batch["seed_time"] is not None:
            data.edge_label_time = torch.from_numpy(batch["seed_time"])
        return data


    def _to_hetero_data(self, batch):
        data, row = self._types.to_hetero_data(batch)
        positives = int(batch["num_positives"])
        src_type, _, dst_type = self.edge_type
        store = data[self.edge_type]
        store.input_id = input_id = torch.from_numpy(batch["input_id"])
        if self.disjoint:
            for name in data.node_types:
                if "batch" in data[name]:
                    data[name].batch = data[name].batch % positives
        src_index = torch.from_numpy(row[batch["src_index"]])
        dst_index = torch.from_numpy(row[batch["dst_index"]])
        seed_time = None if batch["seed_time"] is None else torch.from_numpy(batch["seed_time"])
        if self.neg_sampling == "triplet":
            data[src_type].src_index = src_index
            data[dst_type].dst_pos_index = dst_index
            dst_neg = torch.from_numpy(row[batch["dst_neg_index"]])
            data[dst_type].dst_neg_index = dst_neg.squeeze(-1) if dst_neg.size(1) == 1 else dst_neg
            if seed_time is not None:
                data[src_type].seed_time = seed_time
                data[dst_type].seed_time = seed_time
            return data
        store.edge_label_index = torch.stack([src_index, dst_index])
        pairs = src_index.numel()
        if self.edge_label is not None:
            label = self.edge_label[input_id]
        elif self.neg_sampling == "binary":
            label = torch.ones(positives)
        else:
            label = None
        if label is not None and pairs > positives:
            label = torch.cat([label, label.new_zeros((pairs - positives,) + tuple(label.shape[1:]))])
        if label is not None:
            store.edge_label = label
        if seed_time is not None:
            store.edge_label_time = seed_time
        return data


class _TypeIndex:
    """A heterogeneous folder's nodes and edges by type, as a HeteroData numbers them (each
    type's rows in the order of their original ids: python/graph_handle.h), over read-only
    views of the native graph's arrays, and the conversion of a batch to HeteroData."""

    def __init__(self, graph):
        self.graph = graph
        self.node_types = list(graph.node_types)
        self.edge_types = [tuple(t) for t in graph.edge_types]
        self.node_row = graph._node_index_in_type()  # original id -> row in its type
        self.node_type = graph._node_types()         # original id -> type index
        self.edge_row = graph._edge_index_in_type()  # original edge id -> row in its type
        self.num_nodes = list(graph.num_nodes_by_type)
        self.labelled = set(graph.labelled_node_types)
        self.feature_dims = list(graph.feature_dims_by_type)  # each type's x: the leading columns

    def type_index(self, node_type, loader):
        if not isinstance(node_type, str) or node_type not in self.node_types:
            raise UsageError(f"{loader}: node type {node_type!r} is not one of the graph's: "
                             f"{', '.join(map(repr, self.node_types))}")
        return self.node_types.index(node_type)

    def originals(self, type_index, rows, what):
        """Rows of node type `type_index` (an int64 array) as original ids; UsageError
        naming `what` and the first row outside the type."""
        count = self.num_nodes[type_index]
        bad = np.flatnonzero((rows < 0) | (rows >= count))
        if bad.size:
            raise UsageError(f"{what}: row {int(rows[bad[0]])} (at position {int(bad[0])}) is outside the "
                             f"{count} nodes of type {self.node_types[type_index]!r}")
        return np.ascontiguousarray(self.graph._nodes_of_type(type_index)[rows], dtype=np.int64)

    def input_nodes(self, input_nodes):
        """(input type, seeds as original ids) of NeighborLoader's input_nodes, PyG's way."""
        loader = "NeighborLoader"
        if isinstance(input_nodes, str) and input_nodes in self.node_types:
            input_nodes = (input_nodes, None)
        if isinstance(input_nodes, str):  # a split alone: its nodes must be of one type
            ids = np.array(self.graph.split(input_nodes), dtype=np.int64)
            types = np.unique(self.node_type[ids])
            if types.size != 1:
                raise UsageError(f"NeighborLoader: split {input_nodes!r} holds nodes of "
                                 f"{', '.join(repr(self.node_types[t]) for t in types) or 'no type'}: give "
                                 f"input_nodes as (node type, {input_nodes!r})")
            return self.node_types[int(types[0])], ids
        if not isinstance(input_nodes, tuple) or len(input_nodes) != 2:
            raise TypeError(f"{loader}: with hetero=True, input_nodes must be a node type or (node type, nodes), "
                            f"the node type one of {', '.join(map(repr, self.node_types))}, not {input_nodes!r}")
        name, nodes = input_nodes
        t = self.type_index(name, loader)
        if nodes is None:
            return name, np.ascontiguousarray(self.graph._nodes_of_type(t), dtype=np.int64)
        if isinstance(nodes, str):
            ids = np.array(self.graph.split(nodes), dtype=np.int64)
            return name, ids[self.node_type[ids] == t]
        if isinstance(nodes, torch.Tensor):
            nodes = nodes.detach().cpu().numpy()
        nodes = np.asarray(nodes)
        if nodes.ndim != 1:
            raise UsageError(f"{loader}: input_nodes[1] must be one-dimensional, not of shape {nodes.shape}")
        if nodes.dtype == np.bool_:
            if nodes.shape[0] != self.num_nodes[t]:
                raise UsageError(f"{loader}: input_nodes[1] is a mask of {nodes.shape[0]} entries; type {name!r} "
                                 f"has {self.num_nodes[t]} nodes")
            nodes = np.flatnonzero(nodes)
        elif nodes.size == 0:
            nodes = nodes.astype(np.int64)
        elif not np.issubdtype(nodes.dtype, np.integer):
            raise TypeError(f"{loader}: input_nodes[1] must hold rows of type {name!r} or bools, not {nodes.dtype}")
        return name, self.originals(t, nodes.astype(np.int64), f"{loader}: input_nodes[1]")

    def to_hetero_data(self, batch):
        """(HeteroData, row): the batch per type, and each batch node's position in its
        type's store (what the batch's indices into its nodes become)."""
        node_type = batch["node_type"].astype(np.int64)
        n, T = node_type.shape[0], len(self.node_types)
        order = np.argsort(node_type, kind="stable")  # by type, in batch order within each
        counts = np.bincount(node_type, minlength=T)
        starts = np.concatenate([[0], np.cumsum(counts)])
        row = np.empty(n, dtype=np.int64)
        row[order] = np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], counts)
        n_id = batch["n_id"]
        hops = len(batch["num_sampled_nodes"])
        hop = np.repeat(np.arange(hops), batch["num_sampled_nodes"])
        per_hop = np.bincount(hop * T + node_type, minlength=hops * T).reshape(hops, T)
        x = None if batch["x"] is None else torch.from_numpy(batch["x"])
        y = None if batch["y"] is None else torch.from_numpy(batch["y"])
        group = None if batch["batch"] is None else torch.from_numpy(batch["batch"])
        data = HeteroData()
        for t, name in enumerate(self.node_types):
            positions = order[starts[t]:starts[t + 1]]
            store = data[name]
            store.n_id = torch.from_numpy(self.node_row[n_id[positions]])
            index = torch.from_numpy(positions)
            if x is not None:
                width = self.feature_dims[t]
                store.x = (x if width == x.shape[1] else x[:, :width]).index_select(0, index)
            if y is not None and name in self.labelled:
                store.y = y.index_select(0, index)
            if group is not None:
                store.batch = group.index_select(0, index)
            store.num_sampled_nodes = per_hop[:, t].tolist()
            store.num_nodes = int(positions.size)
        edge_type = batch["edge_type"].astype(np.int64)
        E = len(self.edge_types)
        e_order = np.argsort(edge_type, kind="stable")
        e_counts = np.bincount(edge_type, minlength=E)
        e_starts = np.concatenate([[0], np.cumsum(e_counts)])
        e_hops = len(batch["num_sampled_edges"])
        e_hop = np.repeat(np.arange(e_hops), batch["num_sampled_edges"])
        e_per_hop = np.bincount(e_hop * E + edge_type, minlength=e_hops * E).reshape(e_hops, E)
        edge_index, e_id = batch["edge_index"], batch["e_id"]
        for k, name in enumerate(self.edge_types):
            positions = e_order[e_starts[k]:e_starts[k + 1]]
            store = data[name]
            store.edge_index = torch.from_numpy(row[edge_index[:, positions]])
            store.e_id = torch.from_numpy(self.edge_row[e_id[positions]])
            store.num_sampled_edges = e_per_hop[:, k].tolist()
        return data, row


def _hetero_index(graph, hetero, loader):
    if not isinstance(hetero, bool):
        raise TypeError(f"{loader}: hetero must be a bool, not {type(hetero).__name__}")
    if not hetero:
        return None
    if not graph.is_hetero:
        raise UsageError(f"{loader}: hetero=True is for heterogeneous graphs; {graph.path} is homogeneous")
    return _TypeIndex(graph)


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
    if batch["node_type"] is not None:  # a heterogeneous graph, as HeteroData.to_homogeneous() lays it out
        data.node_type = torch.from_numpy(batch["node_type"])
        data.edge_type = torch.from_numpy(batch["edge_type"])
    data.num_nodes = n_id.numel()
    return data


def _graph_of(data, loader):
    if isinstance(data, (str, os.PathLike)):
        data = Graph(os.fspath(data))
    if not isinstance(data, Graph):
        raise TypeError(f"{loader}: data must be a partita.Graph or a partition folder's path, "
                        f"not {type(data).__name__} (write a Data with partita.partition first)")
    return data


def _fanouts(num_neighbors, loader):
    if isinstance(num_neighbors, dict):
        raise TypeError(f"{loader}: num_neighbors as a dict is for heterogeneous graphs; give a list")
    if not isinstance(num_neighbors, (list, tuple)) or not all(_is_int(k) for k in num_neighbors):
        raise TypeError(f"{loader}: num_neighbors must be a list of ints, not {num_neighbors!r}")
    return [int(k) for k in num_neighbors]


def _negative_sampling(neg_sampling, neg_sampling_ratio):
    """(mode, amount) of PyG's negative-sampling arguments: mode None, "binary" or "triplet"."""
    if neg_sampling is None:
        if neg_sampling_ratio is None or neg_sampling_ratio == 0:
            return None, 1.0
        neg_sampling = {"mode": "binary", "amount": neg_sampling_ratio}
    elif neg_sampling_ratio is not None:
        raise UsageError("LinkNeighborLoader: give neg_sampling or neg_sampling_ratio, not both")
    if isinstance(neg_sampling, str):
        mode, amount = neg_sampling, 1
    elif isinstance(neg_sampling, dict):
        unknown = set(neg_sampling) - {"mode", "amount"}
        if unknown or "mode" not in neg_sampling:
            raise UsageError(f"LinkNeighborLoader: neg_sampling as a dict takes 'mode' and 'amount', "
                             f"not {sorted(neg_sampling)}")
        mode, amount = neg_sampling["mode"], neg_sampling.get("amount", 1)
    elif hasattr(neg_sampling, "mode") and hasattr(neg_sampling, "amount"):  # PyG's NegativeSampling
        if getattr(neg_sampling, "weight", None) is not None:
            raise UsageError("LinkNeighborLoader: weighted negative sampling is not supported; negatives are "
                             "drawn uniformly")
        mode, amount = getattr(neg_sampling.mode, "value", neg_sampling.mode), neg_sampling.amount
    else:
        raise TypeError(f"LinkNeighborLoader: neg_sampling must be 'binary', 'triplet', a dict or PyG's "
                        f"NegativeSampling, not {type(neg_sampling).__name__}")
    if mode not in ("binary", "triplet"):
        raise UsageError(f"LinkNeighborLoader: neg_sampling mode {mode!r} is not one of: binary, triplet")
    if isinstance(amount, bool) or not isinstance(amount, (int, float, np.integer, np.floating)):
        raise TypeError(f"LinkNeighborLoader: neg_sampling amount must be a number, not {type(amount).__name__}")
    return mode, float(amount)


def _int_array(values, name, length):
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != length:
        raise UsageError(f"LinkNeighborLoader: {name} has shape {values.shape}; expected ({length},), one per edge")
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"LinkNeighborLoader: {name} must hold integers, not {values.dtype}")
    return np.ascontiguousarray(values, dtype=np.int64)


def _is_edge_type(value):
    return isinstance(value, (tuple, list)) and len(value) == 3 and all(isinstance(v, str) for v in value)


def _edge_type_index(graph, edge_type):
    """The index of `edge_type` (source type, relation, destination type) in graph.edge_types."""
    types = [tuple(t) for t in graph.edge_types]
    if tuple(edge_type) not in types:
        raise UsageError(f"LinkNeighborLoader: edge type {tuple(edge_type)!r} is not one of the graph's: "
                         f"{', '.join(map(repr, types))}")
    return types.index(tuple(edge_type))


def _label_edges(graph, edge_label_index, types=None):
    """(edge type index or -1, src, dst, times or None) of the loader's edges, the ends as
    int64 arrays of original ids; with `types` (hetero=True) a tensor's are rows of the
    edge type's source and destination types."""
    edge_type = -1
    if isinstance(edge_label_index, tuple):
        if not graph.is_hetero:
            raise TypeError("LinkNeighborLoader: edge_label_index as (edge type, edges) is for heterogeneous graphs")
        if _is_edge_type(edge_label_index):  # an edge type alone: its training edges
            edge_label_index = (edge_label_index, None)
        if len(edge_label_index) != 2 or not _is_edge_type(edge_label_index[0]):
            raise TypeError(f"LinkNeighborLoader: edge_label_index as a tuple must be (edge type, edges), the edge "
                            f"type a (source type, relation, destination type) of strings, not {edge_label_index!r}")
        edge_type = _edge_type_index(graph, edge_label_index[0])
        edge_label_index = edge_label_index[1]
    elif graph.is_hetero:
        raise UsageError(f"LinkNeighborLoader: the graph is heterogeneous: give edge_label_index as (edge type, "
                         f"edges), the edge type one of {', '.join(repr(tuple(t)) for t in graph.edge_types)}")
    if edge_label_index is None or isinstance(edge_label_index, str):
        split = _partita._edge_split(graph, edge_label_index or "train", edge_type)
        index = split["edge_index"]
        return edge_type, np.ascontiguousarray(index[0]), np.ascontiguousarray(index[1]), split["time"]
    if isinstance(edge_label_index, torch.Tensor):
        edge_label_index = edge_label_index.detach().cpu().numpy()
    if not isinstance(edge_label_index, np.ndarray):
        raise TypeError(f"LinkNeighborLoader: edge_label_index must be None, a split name or a [2, num_edges] "
                        f"tensor, not {type(edge_label_index).__name__}")
    if edge_label_index.ndim != 2 or edge_label_index.shape[0] != 2:
        raise UsageError(f"LinkNeighborLoader: edge_label_index has shape {edge_label_index.shape}; "
                         f"expected (2, num_edges)")
    if not np.issubdtype(edge_label_index.dtype, np.integer):
        raise TypeError(f"LinkNeighborLoader: edge_label_index must hold integer node ids, "
                        f"not {edge_label_index.dtype}")
    index = edge_label_index.astype(np.int64)
    if types is not None:
        src_type, _, dst_type = graph.edge_types[edge_type]
        return (edge_type,
                types.originals(types.node_types.index(src_type), index[0], "LinkNeighborLoader: edge_label_index[0]"),
                types.originals(types.node_types.index(dst_type), index[1], "LinkNeighborLoader: edge_label_index[1]"),
                None)
    return edge_type, np.ascontiguousarray(index[0]), np.ascontiguousarray(index[1]), None


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

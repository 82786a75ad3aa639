"""PyTorch Geometric's remote backend over a partition folder: ``FeatureStore`` and
``GraphStore`` (``torch_geometric.data``'s interfaces), so that PyG code taking
``(feature_store, graph_store)`` reads a graph that Partita's partition actors serve::

    fs, gs = partita.pyg.stores(graph)           # a partita.Graph or a folder's path
    x = fs["x", None]                            # every node's features (PyG: fs[None, "x", None])
    rows = fs.get_tensor(attr_name="x", index=torch.tensor([5, 17, 2]))
    edge_index = torch.stack(gs.get_edge_index(None, "coo"))

PyG's keys are (group_name, attr_name, index); a homogeneous graph's attributes have group
None. As a shorthand, a key "x" or ("x", index) that names one of the partitions'
attributes means (None, "x", index): ``fs["x", ids]``, ``fs["x"][ids]`` (unless the user put
tensors under a group of that name, where PyG's meaning stands); and a group left unset in
``get_tensor`` and ``get_tensor_size`` is None: ``fs.get_tensor(attr_name="x", index=ids)``.

Node ids, in and out, are the dataset's own (original) ids, as NeighborLoader's, whatever
the number of parts.

A heterogeneous folder is served as PyG's stores serve a HeteroData: the partitions'
attributes under each node type as group (``fs["movie", "x", rows]``; y under the types
with labels), the edges under each edge type (``gs.get_edge_index(("user", "rates",
"movie"), "coo")``, size (source type's nodes, destination type's)), ids being rows of
their type, as NeighborLoader's with hetero=True give them (n_id).

What belongs to the partitions (read-only):

- FeatureStore: the node attributes the parts hold, group_name None: ``x`` (float32
  [num_nodes, feature_dim]), ``y`` (int64 labels) and ``time`` (node times), those the
  folder has. A get sends one feature request to each partition actor that owns any of
  the wanted nodes (all at once; at most 256 MiB of rows per request), and puts the rows
  in the order asked. Requires ``partita.init()``: the actors run in this process, or on a
  cluster's nodes (part p on node p mod the number of nodes).
- GraphStore: the graph's edges, edge_type None, in the three layouts: ``coo`` (the
  dataset's edge_index: column e is edge e; with ``is_sorted=True``, sorted by destination
  instead), ``csc`` (row, colptr: sources by destination) and ``csr`` (rowptr, col:
  destinations by source), each neighbourhood in edge-id order, ``size=(num_nodes,
  num_nodes)``. Assembled once from the folder's parts, read in this process (no runtime
  needed); the tensors are shared between calls: do not modify them in place.

Putting or removing one of those raises ``partita.UsageError`` (a ValueError) saying it is
read-only. Any other key is the user's: held in this process beside the partitions' with
the semantics of PyG's reference stores (``torch_geometric.testing``): a tensor put with
an index (default: 0..rows-1) is read back by those ids, ``update_tensor`` replaces it,
``remove_tensor`` says whether there was one.

Errors name the problem: an id outside the graph or an index of the wrong kind (TypeError,
or UsageError), an unknown attribute (KeyError, listing those there are), a store whose
runtime was shut down (``partita.RuntimeClosedError``: make a new one after
``partita.init()``).
"""

import copy
import os

import numpy as np
import torch
import torch_geometric.data as pyg_data
from torch_geometric.data.feature_store import _FieldStatus
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout

from . import Graph, UsageError, _partita

__all__ = ["FeatureStore", "GraphStore", "stores"]

_FIELD_UNSET = _FieldStatus.UNSET


def stores(graph, *, timeout=60.0, features="auto"):
    """``(FeatureStore(graph), GraphStore(graph))`` over one opened partition folder."""
    graph = _open(graph, "stores")
    return FeatureStore(graph, timeout=timeout, features=features), GraphStore(graph)


def _open(graph, who):
    if isinstance(graph, (str, os.PathLike)):
        graph = Graph(os.fspath(graph))
    if not isinstance(graph, Graph):
        raise TypeError(f"{who}: graph must be a partita.Graph or a partition folder's path, "
                        f"not {type(graph).__name__} (write a Data with partita.partition first)")
    return graph


def _type_rows(graph, type_index, ids, who):
    """Rows `ids` of node type `type_index` as original ids; UsageError naming the first
    row outside the type."""
    rows = graph._nodes_of_type(type_index)
    bad = np.flatnonzero((ids < 0) | (ids >= rows.shape[0]))
    if bad.size:
        raise UsageError(f"{who}: row {int(ids[bad[0]])} (at position {int(bad[0])}) is outside the "
                         f"{rows.shape[0]} nodes of type {graph.node_types[type_index]!r}")
    return np.ascontiguousarray(rows[ids], dtype=np.int64)


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _as_numpy_index(index, who):
    """A tensor, array, list, tuple or range as a numpy array (not yet checked)."""
    if isinstance(index, torch.Tensor):
        return index.detach().cpu().numpy()
    if isinstance(index, np.ndarray):
        return index
    if isinstance(index, range):
        return np.arange(index.start, index.stop, index.step, dtype=np.int64)
    if isinstance(index, (list, tuple)):
        if not all(_is_int(v) or isinstance(v, (bool, np.bool_)) for v in index):
            raise TypeError(f"{who}: an index as a list must hold node ids (ints) or a mask (bools)")
        array = np.asarray(index)
        return array.astype(np.int64) if array.size == 0 else array
    raise TypeError(f"{who}: the index must be None, a slice, an int, or node ids (a tensor, array or list), "
                    f"not {type(index).__name__}")


def _node_ids(index, num_nodes, who):
    """`index` (PyG's IndexType) as (int64 ids, whether it was one int): None and ':' are
    every node; a slice, the ids it selects of 0..num_nodes-1; a bool mask, the nodes set.
    Ids are checked against the graph by the native side (UsageError naming the id)."""
    if index is None:
        return np.arange(num_nodes, dtype=np.int64), False
    if isinstance(index, slice):
        return np.arange(num_nodes, dtype=np.int64)[index], False
    if _is_int(index):
        return np.array([int(index)], dtype=np.int64), True
    ids = _as_numpy_index(index, who)
    if ids.ndim == 0:
        if ids.dtype == np.bool_ or not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"{who}: a one-element index must be an integer node id, not {ids.dtype}")
        return ids.reshape(1).astype(np.int64), True
    if ids.ndim != 1:
        raise UsageError(f"{who}: the index must be one-dimensional, not of shape {tuple(ids.shape)}")
    if ids.dtype == np.bool_:
        if ids.shape[0] != num_nodes:
            raise UsageError(f"{who}: the index is a mask of {ids.shape[0]} entries; the graph has {num_nodes} nodes")
        return np.flatnonzero(ids).astype(np.int64), False
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"{who}: the index must hold integer node ids or bools, not {ids.dtype}")
    if ids.dtype == np.uint64 and ids.size and ids.max() > np.iinfo(np.int64).max:
        raise UsageError(f"{who}: node {int(ids.max())} is outside the graph's {num_nodes} nodes")
    return np.ascontiguousarray(ids, dtype=np.int64), False


def _pointers(index, n):
    """The n + 1 offsets of a CSR/CSC over `index` (sorted or not: only counts matter)."""
    pointers = torch.zeros(n + 1, dtype=torch.long)
    pointers[1:] = torch.cumsum(torch.bincount(index, minlength=n), 0)
    return pointers


class _Held:
    """A tensor the user put, and the ids of its rows (PyG's reference semantics)."""

    def __init__(self, tensor, index, who):
        if isinstance(tensor, np.ndarray):
            tensor = torch.from_numpy(tensor)
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{who}: the value must be a tensor or an array, not {type(tensor).__name__}")
        if tensor.dim() == 0:
            raise UsageError(f"{who}: the value must have a first dimension (one row per id), not be a scalar")
        rows = tensor.shape[0]
        if index is None or (isinstance(index, slice) and index == slice(None)):
            ids = np.arange(rows, dtype=np.int64)
        else:
            ids, scalar = _node_ids(index, rows, who)
            if scalar:
                raise UsageError(f"{who}: an index of one int puts no rows; give a list of ids")
        if ids.shape[0] != rows:
            raise UsageError(f"{who}: the index has {ids.shape[0]} ids for the value's {rows} rows")
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        if sorted_ids.size > 1 and (sorted_ids[1:] == sorted_ids[:-1]).any():
            repeated = int(sorted_ids[1:][sorted_ids[1:] == sorted_ids[:-1]][0])
            raise UsageError(f"{who}: id {repeated} appears more than once in the index")
        self.tensor = tensor
        self._sorted_ids = sorted_ids
        self._order = order

    def get(self, index, who):
        if index is None or (isinstance(index, slice) and index == slice(None)):
            return self.tensor
        if isinstance(index, slice):  # positions, as the tensor's own slicing
            return self.tensor[index]
        ids, scalar = _node_ids(index, self.tensor.shape[0], who)
        if ids.size == 0:
            return self.tensor[torch.zeros(0, dtype=torch.long)]
        if self._sorted_ids.size == 0:
            raise UsageError(f"{who}: id {int(ids[0])} (at position 0) is not among the put tensor's ids (it has none)")
        where = np.minimum(np.searchsorted(self._sorted_ids, ids), self._sorted_ids.size - 1)
        found = self._sorted_ids[where] == ids
        if not found.all():
            k = int(np.flatnonzero(~found)[0])
            raise UsageError(f"{who}: id {int(ids[k])} (at position {k}) is not among the put tensor's ids")
        rows = self.tensor[torch.from_numpy(self._order[where].astype(np.int64))]
        return rows[0] if scalar else rows


def _group_none(attr):
    """`attr`, or a copy whose unset group is None."""
    if attr is None or attr.group_name is not _FIELD_UNSET:
        return attr
    attr = copy.copy(attr)
    attr.group_name = None
    return attr


class FeatureStore(pyg_data.FeatureStore):
    """The node attributes of a partition folder's parts, read from their partition actors,
    beside the tensors the user puts (held in this process). See the module's doc.

    graph: a partita.Graph or a partition folder's path. timeout: seconds to wait for a
    partition's answer. features: where the partition actors keep the attributes
    ("auto", "memory", "mapped", "disk"; a job's ``features.storage``).
    """

    def __init__(self, graph, *, timeout=60.0, features="auto"):
        super().__init__()
        graph = _open(graph, "FeatureStore")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"FeatureStore: timeout must be a number of seconds, not {type(timeout).__name__}")
        if not isinstance(features, str):
            raise TypeError(f"FeatureStore: features must be a string, not {type(features).__name__}")
        self.graph = graph
        self._lookup = _partita._FeatureLookup(graph, float(timeout), features)
        # name -> (torch dtype, row shape)
        attributes = {name: (getattr(torch, dtype), tuple(row)) for name, dtype, row in self._lookup.attributes()}
        # (group, name) -> (torch dtype, row shape): group None on a homogeneous graph, each
        # node type on a heterogeneous one (y only on the types with labels; x of the type's
        # own width, the leading columns of the partitions' rows).
        if graph.is_hetero:
            labelled = set(graph.labelled_node_types)
            widths = dict(zip(graph.node_types, graph.feature_dims_by_type))
            self._owned = {(t, name): (info if name != "x" else (info[0], (widths[t],)))
                           for t in graph.node_types for name, info in attributes.items()
                           if name != "y" or t in labelled}
        else:
            self._owned = {(None, name): info for name, info in attributes.items()}
        self._held = {}

    # What belongs to the partitions ##########################################

    def _is_owned(self, attr):
        return (attr.group_name, attr.attr_name) in self._owned

    def _num_rows(self, group):
        if group is None:
            return self.graph.num_nodes
        return self.graph.num_nodes_by_type[self.graph.node_types.index(group)]

    def _original_ids(self, group, ids, who):
        if group is None:
            return ids
        return _type_rows(self.graph, self.graph.node_types.index(group), ids, who)

    def _read_only(self, attr, what):
        return UsageError(f"FeatureStore: cannot {what} (group_name={attr.group_name!r}, "
                          f"attr_name={attr.attr_name!r}): it belongs to the partitions of '{self.graph.path}' and "
                          f"is read-only; put your own tensors under another group_name or attr_name")

    def _describe(self):
        owned = [f"({g!r}, {a!r})" for g, a in self._owned]
        held = [f"({g!r}, {a!r})" for g, a in self._held]
        return ", ".join(owned + held) or "none"

    @property
    def requests_per_part(self):
        """Feature requests sent to each part so far."""
        return list(self._lookup.requests_per_part)

    def close(self):
        """Stops the partition actors; later reads of their attributes raise partita.Error."""
        self._lookup.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # PyG's interface #########################################################

    def _put_tensor(self, tensor, attr):
        if self._is_owned(attr):
            raise self._read_only(attr, "put")
        self._held[(attr.group_name, attr.attr_name)] = _Held(tensor, attr.index, "FeatureStore.put_tensor")
        return True

    def _get_tensor(self, attr):
        key = (attr.group_name, attr.attr_name)
        if key in self._held:
            return self._held[key].get(attr.index, "FeatureStore.get_tensor")
        if self._is_owned(attr):
            who = "FeatureStore.get_tensor"
            ids, scalar = _node_ids(attr.index, self._num_rows(attr.group_name), who)
            rows = torch.from_numpy(self._lookup.get(attr.attr_name, self._original_ids(attr.group_name, ids, who)))
            rows = self._type_width(attr, rows)
            return rows[0] if scalar else rows
        raise KeyError(f"FeatureStore: no tensor (group_name={attr.group_name!r}, attr_name={attr.attr_name!r}); "
                       f"it has: {self._describe()}")

    def _type_width(self, attr, rows):
        """A node type's x: the leading columns its nodes use (the partitions pad to the widest)."""
        if attr.group_name is None or attr.attr_name != "x":
            return rows
        width = self._owned[(attr.group_name, "x")][1][0]
        return rows if width == rows.shape[-1] else rows[..., :width].contiguous()

    def _multi_get_tensor(self, attrs):
        # The default, but keeps PyG's contract of None for a missing tensor (its caller
        # names them all).
        out = []
        for attr in attrs:
            try:
                out.append(self._get_tensor(attr))
            except KeyError:
                out.append(None)
        return out

    def _remove_tensor(self, attr):
        if self._is_owned(attr):
            raise self._read_only(attr, "remove")
        return self._held.pop((attr.group_name, attr.attr_name), None) is not None

    def get_tensor(self, *args, convert_type=False, **kwargs):
        # PyG's, except that a group left unset is None, a homogeneous graph's:
        # get_tensor(attr_name="x", index=ids).
        return super().get_tensor(_group_none(self._tensor_attr_cls.cast(*args, **kwargs)), convert_type=convert_type)

    def _get_tensor_size(self, attr):
        attr = _group_none(attr)  # get_tensor_size(attr_name="x") too
        key = (attr.group_name, attr.attr_name)
        if key in self._held:
            return self._held[key].get(attr.index, "FeatureStore.get_tensor_size").size()
        if self._is_owned(attr):
            who = "FeatureStore.get_tensor_size"
            ids, scalar = _node_ids(attr.index, self._num_rows(attr.group_name), who)
            if attr.group_name is not None:
                self._original_ids(attr.group_name, ids, who)  # checks the rows
            elif ids.size and (ids.min() < 0 or ids.max() >= self.graph.num_nodes):
                bad = int(np.flatnonzero((ids < 0) | (ids >= self.graph.num_nodes))[0])
                raise UsageError(f"{who}: node {int(ids[bad])} (at position {bad}) is outside "
                                 f"the graph's {self.graph.num_nodes} nodes")
            row = self._owned[(attr.group_name, attr.attr_name)][1]
            return torch.Size(row if scalar else (ids.shape[0],) + row)
        return None

    # The homogeneous shorthand: fs["x", ids] and fs["x"][ids] ###############

    def _shorthand(self, key):
        """`key` as (attr_name, index) of group None, when it is the shorthand: "x" or
        ("x", index) naming one of the partitions' attributes, with no tensor of the user's
        held under a group of that name (for which PyG's meaning, (group_name, attr_name),
        stands). None otherwise."""
        if isinstance(key, str):
            name, index = key, _FIELD_UNSET
        elif isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
            name, index = key
        else:
            return None
        if (None, name) not in self._owned or any(group == name for group, _ in self._held):
            return None
        return pyg_data.TensorAttr(group_name=None, attr_name=name, index=index)

    def __getitem__(self, key):
        attr = self._shorthand(key)
        if attr is None:
            return super().__getitem__(key)
        # Straight to the read: PyG's checks of a key (TensorAttr.is_fully_specified) compare
        # a numpy index element-wise, and fail on one of several ids.
        return self._get_tensor(attr) if attr.index is not _FIELD_UNSET else self.view(attr)

    def __setitem__(self, key, value):
        attr = self._shorthand(key)
        super().__setitem__(key if attr is None else attr, value)

    def __delitem__(self, key):
        attr = self._shorthand(key)
        super().__delitem__(key if attr is None else attr)

    def get_all_tensor_attrs(self):
        owned = [pyg_data.TensorAttr(group_name=g, attr_name=a) for g, a in self._owned]
        return owned + [pyg_data.TensorAttr(group_name=g, attr_name=a) for g, a in self._held]

    def __len__(self):
        return len(self._owned) + len(self._held)

    def __repr__(self):
        return f"partita.pyg.FeatureStore('{self.graph.path}', {self.graph.num_parts} parts)"


class GraphStore(pyg_data.GraphStore):
    """The edges of a partition folder (edge_type None, COO, CSC and CSR, original ids; on
    a heterogeneous folder each edge type, in rows of its end types), beside the edge
    indices the user puts (held in this process). See the module's doc.

    graph: a partita.Graph or a partition folder's path."""

    def __init__(self, graph):
        super().__init__()
        self.graph = _open(graph, "GraphStore")
        n = self.graph.num_nodes
        if self.graph.is_hetero:
            counts = dict(zip(self.graph.node_types, self.graph.num_nodes_by_type))
            self._sizes = {tuple(t): (counts[t[0]], counts[t[-1]]) for t in self.graph.edge_types}
        else:
            self._sizes = {None: (n, n)}
        self._layouts = {}  # (edge type, layout, is_sorted) -> (tensor, tensor, perm), built when first asked
        self._held = {}

    def _owned_type(self, edge_type):
        """`edge_type` as one of the partitions' edge types (None on a homogeneous graph,
        a tuple on a heterogeneous one), or False when it is not one."""
        key = tuple(edge_type) if isinstance(edge_type, (tuple, list)) else edge_type
        return key if key in self._sizes else False

    @staticmethod
    def _key(attr):
        size = None if attr.size is None else tuple(attr.size)
        return (attr.edge_type, attr.layout.value, attr.is_sorted, size)

    def _read_only(self, edge_type, what):
        return UsageError(f"GraphStore: cannot {what} edge_type {edge_type!r}: it is the edges of the partitions of "
                          f"'{self.graph.path}' and is read-only; put your own edges under another edge_type")

    def _coo(self, edge_type):
        """Edge type `edge_type`'s edges, column e its edge e: the dataset's ids on a
        homogeneous graph; rows of the end types, the type's edges in original edge id
        order, on a heterogeneous one."""
        if "all" not in self._layouts:
            self._layouts["all"] = _partita._edge_index(self.graph)
        coo = self._layouts["all"]
        if edge_type is None:
            return torch.from_numpy(coo[0]), torch.from_numpy(coo[1])
        k = [tuple(t) for t in self.graph.edge_types].index(edge_type)
        columns = np.flatnonzero(self.graph._edge_types() == k)
        rows = self.graph._node_index_in_type()
        return torch.from_numpy(rows[coo[0, columns]]), torch.from_numpy(rows[coo[1, columns]])

    def _partition_edges(self, edge_type, layout, is_sorted=False):
        """The partitions' edges of `edge_type` in `layout` and the permutation from the
        COO's order (the edge ids) into it (None for the COO itself), built when first asked."""
        key = (edge_type, layout, is_sorted and layout == EdgeLayout.COO)
        if key not in self._layouts:
            num_src, num_dst = self._sizes[edge_type]
            if (edge_type, EdgeLayout.COO, False) not in self._layouts:
                self._layouts[(edge_type, EdgeLayout.COO, False)] = self._coo(edge_type) + (None,)
            row, col, _ = self._layouts[(edge_type, EdgeLayout.COO, False)]
            if key == (edge_type, EdgeLayout.COO, False):
                pass
            elif layout == EdgeLayout.CSR:
                # Destinations by source, each neighbourhood in edge-id order (a stable sort).
                perm = torch.from_numpy(np.argsort(row.numpy(), kind="stable"))
                self._layouts[key] = (_pointers(row, num_src), col[perm], perm)
            else:
                # Sources by destination, likewise: the sorted COO and the CSC.
                perm = torch.from_numpy(np.argsort(col.numpy(), kind="stable"))
                src = row[perm]
                self._layouts[(edge_type, EdgeLayout.COO, True)] = (src, col[perm], perm)
                self._layouts[(edge_type, EdgeLayout.CSC, False)] = (src, _pointers(col, num_dst), perm)
        return self._layouts[key]

    def _edge_to_layout(self, attr, layout, store=False):
        # PyG's conversions (coo(), csr(), csc(), and so its samplers' set-up): the
        # partitions' edges are served in every layout as they are, with the permutation
        # from the edge ids, so there is nothing to convert or to store.
        owned = self._owned_type(attr.edge_type)
        if owned is not False:
            return self._partition_edges(owned, layout)
        return super()._edge_to_layout(attr, layout, store)

    # PyG's interface #########################################################

    def _put_edge_index(self, edge_index, edge_attr):
        if self._owned_type(edge_attr.edge_type) is not False:
            raise self._read_only(edge_attr.edge_type, "put")
        if not (isinstance(edge_index, (tuple, list)) and len(edge_index) == 2
                and all(isinstance(t, torch.Tensor) for t in edge_index)):
            raise TypeError(f"GraphStore.put_edge_index: the edge index must be a pair of tensors (row, col), "
                            f"not {type(edge_index).__name__}")
        self._held[self._key(edge_attr)] = tuple(edge_index)
        return True

    def _get_edge_index(self, edge_attr):
        key = self._key(edge_attr)
        if key in self._held:
            return self._held[key]
        owned = self._owned_type(edge_attr.edge_type)
        if owned is False:
            return None
        size = self._sizes[owned]
        if edge_attr.size is not None and tuple(edge_attr.size) != size:
            raise UsageError(f"GraphStore.get_edge_index: size {tuple(edge_attr.size)} for edge_type {owned!r}, "
                             f"whose size is {size}")
        row, col, _ = self._partition_edges(owned, edge_attr.layout, edge_attr.is_sorted)
        return row, col

    def _remove_edge_index(self, edge_attr):
        if self._owned_type(edge_attr.edge_type) is not False:
            raise self._read_only(edge_attr.edge_type, "remove")
        return self._held.pop(self._key(edge_attr), None) is not None

    def get_all_edge_attrs(self):
        # The partitions' first: PyG's conversions of a homogeneous store take the first.
        owned = [EdgeAttr(t, layout, size=size) for t, size in self._sizes.items()
                 for layout in (EdgeLayout.COO, EdgeLayout.CSC, EdgeLayout.CSR)]
        return owned + [EdgeAttr(*key) for key in self._held]

    def __repr__(self):
        return f"partita.pyg.GraphStore('{self.graph.path}', {self.graph.num_parts} parts)"

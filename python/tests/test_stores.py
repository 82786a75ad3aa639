"""partita.pyg.FeatureStore and GraphStore: PyTorch Geometric's remote backend over a partition
folder.

First PyG's own backend checks (the sequences of calls and assertions of PyG 2.5.3's
test/data/test_feature_store.py and test_graph_store.py, which exercise its reference
MyFeatureStore and MyGraphStore), run here against Partita's stores: on the keys a user puts
(held in the process) they must behave as PyG's reference does. Then what is Partita's own:
the partitions' attributes and edges equal the dataset's (Cora read independently, and a
small Data built here), on 1 and 2 parts alike; one feature request per owning part; PyG code
that takes (feature_store, graph_store) reads them; the read-only keys; bad input; a closed
runtime; and the stores through partita.init(address=...) on a head with two nodes.
"""

import threading
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch_geometric.data import Data, TensorAttr
from torch_geometric.data.feature_store import AttrView, _FieldStatus
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout
from torch_geometric.testing import get_random_edge_index
from torch_geometric.utils import to_torch_coo_tensor, to_torch_csc_tensor, to_torch_csr_tensor

import partita
import partita.pyg
from test_cluster import cluster, wait_for_nodes  # noqa: F401 - `cluster` is a fixture


@pytest.fixture(scope="module")
def stores(cora_parts):
    """(FeatureStore, GraphStore) over Cora in 1 and in 2 parts, shared by the tests that only read."""
    made = {k: partita.pyg.stores(graph) for k, graph in cora_parts.items()}
    yield made
    for fs, _ in made.values():
        fs.close()


# PyG's backend checks ##########################################################################


def test_pyg_feature_store_checks(cora_parts):
    store = partita.pyg.FeatureStore(cora_parts[2])
    tensor = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])

    group_name = "A"
    attr_name = "feat"
    index = torch.tensor([0, 1, 2])
    attr = TensorAttr(group_name, attr_name, index)
    assert TensorAttr(group_name).update(attr) == attr

    # The calls of PyG's interface:
    assert store.put_tensor(tensor, attr)
    assert torch.equal(store.get_tensor(attr), tensor)
    assert torch.equal(store.get_tensor(group_name, attr_name, index=torch.tensor([0, 2])),
                       tensor[torch.tensor([0, 2])])

    assert store.update_tensor(tensor + 1, attr)
    assert torch.equal(store.get_tensor(attr), tensor + 1)

    assert store.remove_tensor(attr)
    with pytest.raises(KeyError):
        store.get_tensor(attr)

    # Views:
    view = store.view(group_name=group_name)
    view.attr_name = attr_name
    view["index"] = index
    assert view != "not an AttrView"
    assert view == AttrView(store, TensorAttr(group_name, attr_name, index))
    assert str(view) == (f"AttrView(store={store!r}, attr=TensorAttr(group_name='A', attr_name='feat', "
                         f"index=tensor([0, 1, 2])))")

    # Indexing:
    store[group_name, attr_name, index] = tensor

    # Fully specified keys give the tensor:
    assert torch.equal(store[group_name, attr_name, index], tensor)
    assert torch.equal(store[group_name, attr_name, None], tensor)
    assert torch.equal(store[group_name, attr_name, :], tensor)
    assert torch.equal(store[group_name][attr_name][:], tensor)
    assert torch.equal(store[group_name].feat[:], tensor)
    assert torch.equal(store.view().A.feat[:], tensor)

    with pytest.raises(AttributeError):
        store.view(group_name=group_name, index=None).feat.A

    # Partly specified keys give views:
    assert store[group_name] == store.view(TensorAttr(group_name=group_name))
    assert store[group_name].feat == store.view(TensorAttr(group_name=group_name, attr_name=attr_name))

    # which, called, give the tensor of what they specify:
    store[group_name] = tensor
    assert isinstance(store[group_name], AttrView)
    assert torch.equal(store[group_name](), tensor)

    # Deletion:
    del store[group_name, attr_name, index]
    with pytest.raises(KeyError):
        store[group_name, attr_name, index]
    del store[group_name]
    with pytest.raises(KeyError):
        store[group_name]()
    store.close()


@dataclass
class AttrWithoutGroup(TensorAttr):
    """A TensorAttr whose group is always None, indexed (attr_name, index): PyG's override check."""

    def __init__(self, attr_name=_FieldStatus.UNSET, index=_FieldStatus.UNSET):
        super().__init__(None, attr_name, index)


class FeatureStoreWithoutGroup(partita.pyg.FeatureStore):
    def __init__(self, graph):
        super().__init__(graph)
        self._tensor_attr_cls = AttrWithoutGroup


def test_pyg_feature_store_override_checks(cora_parts, cora):
    store = FeatureStoreWithoutGroup(cora_parts[2])
    tensor = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    attr_name = "feat"
    index = torch.tensor([0, 1, 2])

    # Only attr_name and index, in that order:
    store[attr_name, index] = tensor
    assert isinstance(store[attr_name], AttrView)
    assert torch.equal(store[attr_name, index], tensor)
    assert torch.equal(store[attr_name][index], tensor)
    assert torch.equal(store[attr_name][:], tensor)
    assert torch.equal(store[attr_name, :], tensor)

    # The partitions' attributes have group None: the same forms reach them.
    ids = torch.tensor([2707, 0, 1500])
    assert torch.equal(store["x", ids], torch.from_numpy(cora.x[ids.numpy()]))
    assert torch.equal(store["y"][ids], torch.from_numpy(cora.y[ids.numpy()]))
    assert torch.equal(store["x", :], torch.from_numpy(cora.x))
    store.close()


def test_pyg_graph_store_checks(cora_parts):
    graph_store = partita.pyg.GraphStore(cora_parts[2])
    assert str(graph_store) == f"partita.pyg.GraphStore('{cora_parts[2].path}', 2 parts)"

    coo = torch.tensor([0, 1]), torch.tensor([1, 2])
    csr = torch.tensor([0, 1, 2]), torch.tensor([1, 2])
    csc = torch.tensor([0, 1]), torch.tensor([0, 0, 1, 2])

    graph_store["edge_type", "coo"] = coo
    graph_store["edge_type", "csr"] = csr
    graph_store["edge_type", "csc"] = csc

    assert torch.equal(graph_store["edge_type", "coo"][0], coo[0])
    assert torch.equal(graph_store["edge_type", "coo"][1], coo[1])
    assert torch.equal(graph_store["edge_type", "csr"][0], csr[0])
    assert torch.equal(graph_store["edge_type", "csr"][1], csr[1])
    assert torch.equal(graph_store["edge_type", "csc"][0], csc[0])
    assert torch.equal(graph_store["edge_type", "csc"][1], csc[1])

    # The three put, after the partitions' edges in their three layouts.
    assert len(graph_store.get_all_edge_attrs()) == 3 + 3

    del graph_store["edge_type", "coo"]
    with pytest.raises(KeyError):
        graph_store["edge_type", "coo"]

    with pytest.raises(KeyError):
        graph_store["edge_type_2", "coo"]


def test_pyg_graph_store_conversion_checks(tmp_path):
    # PyG's check puts one random graph in each layout and converts them all. A partition's
    # store is one homogeneous graph (edge_type None, read-only), so the graph is partitioned
    # here and the same conversions and assertions are made on the store's edges.
    edge_index = get_random_edge_index(100, 100, 300)
    adj = to_torch_coo_tensor(edge_index, size=(100, 100))
    coo = (adj.indices()[0], adj.indices()[1])
    adj = to_torch_csr_tensor(edge_index, size=(100, 100))
    csr = (adj.crow_indices(), adj.col_indices())
    adj = to_torch_csc_tensor(edge_index, size=(100, 100))
    csc = (adj.row_indices(), adj.ccol_indices())
    data = Data(x=torch.zeros(100, 1), edge_index=torch.stack(coo))
    graph_store = partita.pyg.GraphStore(partita.partition(data, tmp_path / "random", num_parts=2))

    # To COO:
    row, col, perm = graph_store.coo()
    assert torch.equal(row.sort()[0], coo[0].sort()[0])
    assert torch.equal(col.sort()[0], coo[1].sort()[0])
    assert perm is None

    # To CSR:
    row, col, perm = graph_store.csr()
    assert torch.equal(row, csr[0])
    assert torch.equal(col.sort()[0], csr[1].sort()[0])

    # To CSC:
    row, col, perm = graph_store.csc()
    assert torch.equal(row.sort()[0], csc[0].sort()[0])
    assert torch.equal(col, csc[1])

    # The edge_types argument (a homogeneous store has the one):
    out = graph_store.coo([None])
    assert torch.equal(out[0], coo[0]) and torch.equal(out[1], coo[1])

    # The store argument: the store serves every layout, nothing is added.
    key = EdgeAttr(edge_type=None, layout=EdgeLayout.CSR, is_sorted=False, size=(100, 100))
    out = graph_store.csr([None], store=True)
    assert torch.equal(out[0], csr[0])
    assert torch.equal(out[1].sort()[0], csr[1].sort()[0])
    out = graph_store[key]
    assert torch.equal(out[0], csr[0])
    assert torch.equal(out[1].sort()[0], csr[1].sort()[0])
    assert len(graph_store.get_all_edge_attrs()) == 3


# The partitions' attributes and edges ##########################################################


@pytest.mark.parametrize("parts", [1, 2])
def test_features_and_labels_are_the_datasets(stores, cora, parts):
    fs, _ = stores[parts]
    assert [(a.group_name, a.attr_name) for a in fs.get_all_tensor_attrs()] == [(None, "x"), (None, "y")]
    assert len(fs) == 2
    x, y = torch.from_numpy(cora.x), torch.from_numpy(cora.y)
    assert torch.equal(fs["x", None], x)
    assert fs["x", None].dtype == torch.float32 and fs["y", None].dtype == torch.int64
    assert torch.equal(fs[None, "y", None], y)
    assert torch.equal(fs.view(group_name=None)["y"](), y)
    assert fs.get_tensor_size(attr_name="x") == (2708, 1433)
    assert fs.get_tensor_size(attr_name="y", index=torch.tensor([3, 4])) == (2, )
    assert fs.get_tensor_size(attr_name="x", index=7) == (1433, )
    assert fs.get_tensor_size(attr_name="nothing") is None

    generator = torch.Generator().manual_seed(parts)
    ids = torch.randint(0, 2708, (500, ), generator=generator)  # repeats, any order
    assert torch.equal(fs.get_tensor(group_name=None, attr_name="x", index=ids), x[ids])
    assert torch.equal(fs.get_tensor(attr_name="y", index=ids), y[ids])
    # Every index PyG's stores take:
    assert torch.equal(fs["x", ids.numpy()], x[ids])
    assert torch.equal(fs["y", ids.tolist()], y[ids])
    assert torch.equal(fs["x", 5:100:7], x[5:100:7])
    assert torch.equal(fs["x", 17], x[17])
    assert torch.equal(fs["y", np.int64(2707)], y[2707])
    mask = torch.zeros(2708, dtype=torch.bool)
    mask[ids] = True
    assert torch.equal(fs["y", mask], y[mask])
    assert fs["x", torch.zeros(0, dtype=torch.long)].shape == (0, 1433)
    assert torch.equal(fs["x", ids.to(torch.int32)], x[ids])
    as_numpy = fs.get_tensor(None, "x", index=np.array([4]), convert_type=True)  # PyG takes one-id arrays
    assert isinstance(as_numpy, np.ndarray) and np.array_equal(as_numpy, cora.x[[4]])
    both = fs.multi_get_tensor([TensorAttr(None, "x", ids), TensorAttr(None, "y", ids)])
    assert torch.equal(both[0], x[ids]) and torch.equal(both[1], y[ids])


def test_one_feature_request_per_owning_part(stores, cora_parts):
    fs, _ = stores[2]
    graph = cora_parts[2]
    book = graph.partition_book
    global_ids = np.asarray(graph.global_ids())
    in_part0 = np.flatnonzero(global_ids < book[1])
    in_part1 = np.flatnonzero(global_ids >= book[1])
    assert len(in_part0) > 10 and len(in_part1) > 10

    before = fs.requests_per_part
    fs["x", np.concatenate([in_part1[:300], in_part0[:300], in_part1[300:400]])]
    assert [a - b for a, b in zip(fs.requests_per_part, before)] == [1, 1]
    before = fs.requests_per_part
    fs["y", in_part0[:50]]
    assert [a - b for a, b in zip(fs.requests_per_part, before)] == [1, 0]
    before = fs.requests_per_part
    fs["x", None]  # every node: still one request per part
    assert [a - b for a, b in zip(fs.requests_per_part, before)] == [1, 1]
    before = fs.requests_per_part
    fs["x", torch.zeros(0, dtype=torch.long)]  # nothing to ask
    assert fs.requests_per_part == before


def reference_layouts(edge_index, num_nodes):
    """CSC (row, colptr) and CSR (rowptr, col) of `edge_index`, each neighbourhood in edge order."""
    src, dst = edge_index
    by_dst = np.argsort(dst, kind="stable")
    by_src = np.argsort(src, kind="stable")
    colptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=num_nodes))])
    rowptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=num_nodes))])
    return (src[by_dst], colptr, by_dst), (rowptr, dst[by_src], by_src)


@pytest.mark.parametrize("parts", [1, 2])
def test_edges_are_the_datasets(stores, cora, parts):
    _, gs = stores[parts]
    n = cora.num_nodes
    assert [(a.edge_type, a.layout, a.is_sorted, a.size) for a in gs.get_all_edge_attrs()] == [
        (None, EdgeLayout.COO, False, (n, n)), (None, EdgeLayout.CSC, True, (n, n)),
        (None, EdgeLayout.CSR, False, (n, n))]
    row, col = gs.get_edge_index(edge_type=None, layout="coo")
    assert np.array_equal(torch.stack([row, col]).numpy(), cora.edge_index)  # edge e is column e
    (csc_row, colptr, by_dst), (rowptr, csr_col, by_src) = reference_layouts(cora.edge_index, n)
    row, col = gs.get_edge_index(None, "coo", is_sorted=True)
    assert np.array_equal(row.numpy(), csc_row) and np.array_equal(col.numpy(), cora.edge_index[1][by_dst])
    row, col = gs.get_edge_index(None, "csc")
    assert np.array_equal(row.numpy(), csc_row) and np.array_equal(col.numpy(), colptr)
    row, col = gs[None, "csr"]
    assert np.array_equal(row.numpy(), rowptr) and np.array_equal(col.numpy(), csr_col)
    # PyG's conversions give the same, with the permutation from the edge ids:
    row, col, perm = gs.csc()
    assert np.array_equal(row.numpy(), csc_row) and np.array_equal(perm.numpy(), by_dst)
    row, col, perm = gs.csr()
    assert np.array_equal(col.numpy(), csr_col) and np.array_equal(perm.numpy(), by_src)


def test_a_small_data_built_here(tmp_path):
    # Node ids are the Data's rows whatever the parts: features, labels and edges read back as given.
    generator = torch.Generator().manual_seed(3)
    num_nodes = 60
    edge_index = torch.randint(0, num_nodes, (2, 240), generator=generator)
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    x = torch.randn(num_nodes, 5, generator=generator)
    y = torch.randint(0, 4, (num_nodes, ), generator=generator)
    data = Data(x=x, y=y, edge_index=edge_index)
    for parts in (1, 3):
        graph = partita.partition(data, tmp_path / f"small{parts}", num_parts=parts)
        fs, gs = partita.pyg.stores(graph.path)  # a path works as well as a Graph
        assert torch.equal(fs["x", None], x) and torch.equal(fs["y", None], y)
        ids = torch.tensor([59, 0, 31, 31, 7])
        assert torch.equal(fs["x", ids], x[ids])
        assert torch.equal(torch.stack(gs[None, "coo"]), edge_index)
        before = fs.requests_per_part
        fs["y", None]
        assert sum(a - b for a, b in zip(fs.requests_per_part, before)) == sum(
            1 for p in range(parts) if graph.partition_book[p + 1] > graph.partition_book[p])
        fs.close()


def test_node_times_are_an_attribute_too(tmp_path):
    # An npy folder with node times (and no labels): the store has x and time.
    folder = tmp_path / "npy"
    folder.mkdir()
    generator = np.random.default_rng(4)
    np.save(folder / "edge_index.npy", generator.integers(0, 40, (2, 100), dtype=np.int64))
    np.save(folder / "x.npy", generator.standard_normal((40, 3), dtype=np.float32))
    np.save(folder / "node_time.npy", generator.integers(0, 1000, 40, dtype=np.int64))
    fs, gs = partita.pyg.stores(partita.partition(folder, tmp_path / "parts", num_parts=2))
    assert [a.attr_name for a in fs.get_all_tensor_attrs()] == ["x", "time"]
    assert np.array_equal(fs["time", None].numpy(), np.load(folder / "node_time.npy"))
    assert np.array_equal(fs[None, "x", torch.tensor([39, 1])].numpy(), np.load(folder / "x.npy")[[39, 1]])
    with pytest.raises(KeyError, match=r"attr_name='y'\); it has: \(None, 'x'\), \(None, 'time'\)"):
        fs[None, "y", None]
    fs.close()


def test_pyg_code_reads_the_stores(stores, cora):
    # PyG's own helpers for (feature_store, graph_store) inputs: the loaders' Data filter and
    # the neighbour sampler's set-up (its sampling needs pyg-lib, which is not here).
    import warnings

    from torch_geometric.loader.utils import filter_custom_store
    from torch_geometric.sampler import NeighborSampler

    fs, gs = stores[2]
    node = torch.tensor([4, 1000, 2707, 12])
    row, col = torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])
    data = filter_custom_store(fs, gs, node, row, col, None)
    assert data.num_nodes == 4
    assert torch.equal(data.x, torch.from_numpy(cora.x[node.numpy()]))
    assert torch.equal(data.y, torch.from_numpy(cora.y[node.numpy()]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "without pyg-lib is deprecated"
        sampler = NeighborSampler((fs, gs), num_neighbors=[5, 5])
    assert not sampler.is_hetero and sampler.num_nodes == cora.num_nodes
    (csc_row, colptr, by_dst), _ = reference_layouts(cora.edge_index, cora.num_nodes)
    assert np.array_equal(sampler.row.numpy(), csc_row) and np.array_equal(sampler.colptr.numpy(), colptr)
    assert np.array_equal(sampler.perm.numpy(), by_dst)  # e_id: the dataset's edge ids


def test_the_partitions_keys_are_read_only(cora_parts, cora):
    fs, gs = partita.pyg.stores(cora_parts[2])
    x = torch.from_numpy(cora.x)
    with pytest.raises(partita.UsageError, match=r"cannot put .*'x'.* read-only"):
        fs["x", None] = x
    with pytest.raises(partita.UsageError, match=r"cannot put .*'y'.* read-only"):
        fs.put_tensor(torch.zeros(2708, dtype=torch.long), group_name=None, attr_name="y", index=None)
    with pytest.raises(ValueError, match=r"cannot remove .*'x'.* read-only"):  # UsageError is a ValueError
        del fs["x", None]
    with pytest.raises(partita.UsageError, match="read-only"):
        fs.update_tensor(x + 1, group_name=None, attr_name="x", index=None)
    assert torch.equal(fs["x", None], x)  # unchanged
    # The same names under another group are the user's:
    assert fs.put_tensor(x[:10] * 2, group_name="mine", attr_name="x", index=torch.arange(10))
    assert torch.equal(fs["mine", "x", torch.tensor([9, 0])], x[[9, 0]] * 2)
    assert torch.equal(fs["x", torch.tensor([9, 0])], x[[9, 0]])
    assert len(fs) == 3
    assert not fs.remove_tensor(group_name="nobody", attr_name="x", index=None)
    with pytest.raises(partita.UsageError, match="id 10 .at position 1. is not among the put tensor's ids"):
        fs["mine", "x", torch.tensor([0, 10])]

    row, col = gs[None, "coo"]
    with pytest.raises(partita.UsageError, match="cannot put edge_type None.*read-only"):
        gs[None, "coo"] = (row, col)
    with pytest.raises(partita.UsageError, match="cannot remove edge_type None.*read-only"):
        del gs[None, "csc"]
    assert gs.put_edge_index((row[:5], col[:5]), ("paper", "cites", "paper"), "coo")
    assert torch.equal(gs[("paper", "cites", "paper"), "coo"][0], row[:5])
    assert gs.remove_edge_index(("paper", "cites", "paper"), "coo")
    assert not gs.remove_edge_index(("paper", "cites", "paper"), "coo")
    fs.close()


# Bad input ####################################################################################


def test_bad_input_names_the_problem(stores, cora_parts, tmp_path):
    fs, gs = stores[2]
    with pytest.raises(partita.UsageError, match=r"node 2708 \(at position 1\) is outside the graph's 2708 nodes"):
        fs["x", torch.tensor([0, 2708])]
    with pytest.raises(ValueError, match=r"node -1 \(at position 0\) is outside"):
        fs["y", [-1, 3]]
    with pytest.raises(partita.UsageError, match="node 5000 .at position 0. is outside"):
        fs.get_tensor_size(attr_name="x", index=torch.tensor([5000]))
    with pytest.raises(TypeError, match="the index must hold integer node ids or bools, not float32"):
        fs["x", torch.tensor([1.0, 2.0])]
    with pytest.raises(TypeError, match="the index must be None, a slice, an int, or node ids"):
        fs["x", {1, 2}]
    with pytest.raises(TypeError, match="an index as a list must hold node ids"):
        fs["x", [1.5]]
    with pytest.raises(partita.UsageError, match=r"one-dimensional, not of shape \(2, 2\)"):
        fs["x", torch.zeros(2, 2, dtype=torch.long)]
    with pytest.raises(partita.UsageError, match="a mask of 10 entries; the graph has 2708 nodes"):
        fs["x", torch.ones(10, dtype=torch.bool)]
    with pytest.raises(KeyError, match=r"no tensor \(group_name=None, attr_name='features'\); it has: \(None, 'x'\)"):
        fs[None, "features", None]
    with pytest.raises(KeyError, match=r"no tensor \(group_name='features', attr_name=None\)"):
        fs["features"]()  # not the shorthand: PyG's (group_name, attr_name)
    with pytest.raises(KeyError, match="not found"):  # PyG's message for a missing one among several
        fs.multi_get_tensor([TensorAttr(None, "x", None), TensorAttr(None, "z", None)])
    with pytest.raises(KeyError):
        gs.get_edge_index(("a", "b", "c"), "coo")
    with pytest.raises(partita.UsageError, match=r"size \(5, 5\) for edge_type None, whose size is \(2708, 2708\)"):
        gs.get_edge_index(None, "coo", size=(5, 5))
    with pytest.raises(TypeError, match="a pair of tensors"):
        gs.put_edge_index([1, 2], "mine", "coo")
    with pytest.raises(TypeError, match="the value must be a tensor or an array"):
        fs["mine", "v", None] = [1, 2, 3]
    with pytest.raises(partita.UsageError, match="the index has 2 ids for the value's 3 rows"):
        fs.put_tensor(torch.zeros(3), group_name="mine", attr_name="v", index=torch.tensor([0, 1]))
    with pytest.raises(partita.UsageError, match="id 1 appears more than once"):
        fs.put_tensor(torch.zeros(3), group_name="mine", attr_name="v", index=torch.tensor([1, 0, 1]))
    # The native layer's own checks, under the Python one:
    with pytest.raises(partita.UsageError, match="no node attribute 'z' .they have: x, y."):
        fs._lookup.get("z", np.array([1], dtype=np.int64))
    with pytest.raises(partita.UsageError, match="node 9999 .at position 0. is outside"):
        fs._lookup.get("x", np.array([9999], dtype=np.int64))

    with pytest.raises(TypeError, match="graph must be a partita.Graph or a partition folder's path"):
        partita.pyg.FeatureStore(42)
    with pytest.raises(TypeError, match="graph must be a partita.Graph"):
        partita.pyg.GraphStore(None)
    with pytest.raises(partita.Error, match="does not exist"):
        partita.pyg.stores(tmp_path / "nowhere")
    with pytest.raises(partita.UsageError, match="timeout -1"):
        partita.pyg.FeatureStore(cora_parts[1], timeout=-1)
    with pytest.raises(partita.UsageError, match="features"):
        partita.pyg.FeatureStore(cora_parts[1], features="in-the-cloud")


def test_a_closed_store_and_a_closed_runtime(cora_parts, cora):
    closed = partita.pyg.FeatureStore(cora_parts[2])
    closed.close()
    closed.close()  # again: nothing to do
    with pytest.raises(partita.Error, match="FeatureStore: closed"):
        closed["x", None]

    live, gs = partita.pyg.stores(cora_parts[2])
    assert torch.equal(live["y", [1, 2]], torch.from_numpy(cora.y[[1, 2]]))
    partita.shutdown()
    try:
        with pytest.raises(partita.RuntimeClosedError, match=r"runtime was shut down \(partita.shutdown\(\)\)"):
            live["x", [0]]
        with pytest.raises(partita.RuntimeClosedError, match="was shut down"):
            partita.pyg.FeatureStore(cora_parts[2])
        # The edges come from the folder: no runtime needed.
        assert np.array_equal(torch.stack(gs[None, "coo"]).numpy(), cora.edge_index)
    finally:
        partita.init(threads=2)
    with pytest.raises(partita.RuntimeClosedError, match="make a new store"):
        live["x", [0]]  # a store of the stopped runtime stays closed
    again = partita.pyg.FeatureStore(cora_parts[2])
    assert torch.equal(again["y", [1, 2]], torch.from_numpy(cora.y[[1, 2]]))
    again.close()


def test_concurrent_readers_and_a_shutdown_in_between(cora_parts, cora):
    fs = partita.pyg.FeatureStore(cora_parts[2])
    x = torch.from_numpy(cora.x)
    outcome = {"ok": 0, "errors": []}
    lock = threading.Lock()
    started = threading.Barrier(5)

    def read(seed):
        generator = torch.Generator().manual_seed(seed)
        started.wait()
        try:
            for _ in range(200):
                ids = torch.randint(0, 2708, (64, ), generator=generator)
                assert torch.equal(fs["x", ids], x[ids])
                with lock:
                    outcome["ok"] += 1
        except Exception as e:  # noqa: BLE001 - the outcome is what the test checks
            with lock:
                outcome["errors"].append(e)

    threads = [threading.Thread(target=read, args=(seed, )) for seed in range(4)]
    for t in threads:
        t.start()
    started.wait()
    try:
        while outcome["ok"] < 40 and all(t.is_alive() for t in threads):
            threading.Event().wait(0.01)
        partita.shutdown()
        for t in threads:
            t.join(60)
            assert not t.is_alive()
    finally:
        if not partita.is_running():
            partita.init(threads=2)
    # Each reader either finished its reads or stopped at the shutdown, with the error saying so.
    assert outcome["ok"] >= 40
    assert all(isinstance(e, partita.RuntimeClosedError) for e in outcome["errors"]), outcome["errors"]


# On a cluster ###################################################################################


def test_stores_on_a_clusters_nodes(cluster, cora_parts, cora):  # noqa: F811 - the fixture
    head, tls, nodes = cluster
    wait_for_nodes(head, tls, 2)
    graph = cora_parts[2]
    ids = torch.randint(0, 2708, (700, ), generator=torch.Generator().manual_seed(5))
    partita.shutdown()
    try:
        partita.init(head, tls_dir=tls)
        assert sorted(partita.nodes()) == sorted(d.address for d in nodes)
        # Partition 0's actor on one node, partition 1's on the other; rows cross processes.
        fs, gs = partita.pyg.stores(graph)
        assert torch.equal(fs["x", None], torch.from_numpy(cora.x))
        assert torch.equal(fs["y", ids], torch.from_numpy(cora.y[ids.numpy()]))
        assert fs.requests_per_part == [2, 2]
        assert np.array_equal(torch.stack(gs[None, "coo"]).numpy(), cora.edge_index)
        with pytest.raises(partita.UsageError, match="node 2708 .at position 0. is outside"):
            fs["x", [2708]]
        fs.close()
    finally:
        partita.shutdown()
        partita.init(threads=2)

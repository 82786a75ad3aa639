"""partita.pyg.FeatureStore and GraphStore on a heterogeneous folder, served as PyG serves a
HeteroData: attributes under each node type, edges under each edge type, ids the rows of
their type. Checked with the calls of PyG's own backend tests (test_feature_store.py,
test_graph_store.py, test_remote_backend_utils.py), against the user's HeteroData it was
partitioned from (MovieLens: test_hetero_data.py), on 1 and 2 parts, and by PyG's code
that reads (feature_store, graph_store)."""

import warnings

import numpy as np
import pytest
import torch
from torch_geometric.data import HeteroData, TensorAttr
from torch_geometric.data.graph_store import EdgeAttr, EdgeLayout
from torch_geometric.data.remote_backend_utils import num_nodes, size
from torch_geometric.testing import get_random_edge_index
from torch_geometric.utils import to_torch_coo_tensor, to_torch_csc_tensor, to_torch_csr_tensor

import partita
import partita.pyg
from test_hetero_data import RATED_BY, RATES, movielens_hetero_data


@pytest.fixture(scope="module")
def source():
    return movielens_hetero_data()


@pytest.fixture(scope="module")
def stores(tmp_path_factory, source):
    root = tmp_path_factory.mktemp("movielens-stores")
    made = {k: partita.pyg.stores(partita.partition(source, root / f"parts{k}", num_parts=k)) for k in (1, 2)}
    yield made
    for fs, _ in made.values():
        fs.close()


@pytest.mark.parametrize("parts", [1, 2])
def test_features_and_labels_are_the_heterodatas_by_type(stores, source, parts):
    fs, _ = stores[parts]
    assert [(a.group_name, a.attr_name) for a in fs.get_all_tensor_attrs()] == [
        ("user", "x"), ("movie", "x"), ("movie", "y")]
    rows = torch.tensor([9741, 0, 17, 5000])
    assert torch.equal(fs["movie", "x", rows], source["movie"].x[rows])
    assert torch.equal(fs["movie"]["y"][rows], source["movie"].y[rows])
    assert torch.equal(fs.get_tensor("user", "x", index=torch.tensor([609, 3])), source["user"].x[[609, 3]])
    assert torch.equal(fs["user", "x", None], source["user"].x)
    assert torch.equal(fs["movie", "y", source["movie"].test_mask], source["movie"].y[source["movie"].test_mask])
    assert torch.equal(fs["movie", "x", 5], source["movie"].x[5])
    assert fs.get_tensor_size(TensorAttr("movie", "x")) == (9742, source["movie"].x.shape[1])
    assert fs.get_tensor_size(TensorAttr("user", "x", torch.tensor([1, 2]))) == (2, source["user"].x.shape[1])


@pytest.mark.parametrize("parts", [1, 2])
def test_edges_are_the_heterodatas_by_type(stores, source, parts):
    _, gs = stores[parts]
    attrs = gs.get_all_edge_attrs()
    assert {(a.edge_type, a.layout, tuple(a.size)) for a in attrs} == {
        (t, layout, (source[t[0]].num_nodes, source[t[-1]].num_nodes))
        for t in (RATES, RATED_BY) for layout in (EdgeLayout.COO, EdgeLayout.CSC, EdgeLayout.CSR)}
    for edge_type in (RATES, RATED_BY):
        edge_index = source[edge_type].edge_index
        shape = (source[edge_type[0]].num_nodes, source[edge_type[-1]].num_nodes)
        row, col = gs.get_edge_index(edge_type, "coo")
        assert torch.equal(torch.stack([row, col]), edge_index)  # column e: the type's edge e
        row, col = gs[edge_type, "csc"]
        adj = to_torch_csc_tensor(edge_index, size=shape)
        assert torch.equal(col, adj.ccol_indices())
        order = torch.from_numpy(np.argsort(edge_index[1].numpy(), kind="stable"))
        assert torch.equal(row, edge_index[0][order])  # each neighbourhood in edge order
        rowptr, dst = gs[edge_type, "csr"]
        assert torch.equal(rowptr, to_torch_csr_tensor(edge_index, size=shape).crow_indices())
        _, _, perm = gs.csc()
        assert torch.equal(perm[edge_type], order)


def test_pyg_feature_store_checks_beside_the_partitions(stores, source):
    fs, _ = stores[2]
    tensor = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    attr = TensorAttr("A", "feat", torch.tensor([0, 1, 2]))
    assert fs.put_tensor(tensor, attr)
    assert torch.equal(fs.get_tensor(attr), tensor)
    assert torch.equal(fs["A", "feat", torch.tensor([0, 2])], tensor[[0, 2]])
    assert torch.equal(fs["A"].feat[:], tensor)
    # A user's attribute under a node type's group, beside the partitions' there.
    fs["movie", "score", None] = torch.arange(9742.0)
    assert torch.equal(fs["movie", "score", torch.tensor([3, 1])], torch.tensor([3.0, 1.0]))
    assert torch.equal(fs["movie", "x", torch.tensor([3])], source["movie"].x[[3]])
    assert fs.remove_tensor(attr) and fs.remove_tensor(TensorAttr("movie", "score", None))
    with pytest.raises(KeyError):
        fs.get_tensor(attr)
    with pytest.raises(partita.UsageError, match=r"cannot put \(group_name='movie', attr_name='x'\).*read-only"):
        fs["movie", "x", None] = torch.zeros(9742, 1)
    with pytest.raises(partita.UsageError, match=r"row 610 \(at position 1\) is outside the 610 nodes of type 'user'"):
        fs["user", "x", torch.tensor([0, 610])]
    with pytest.raises(KeyError, match=r"no tensor \(group_name='user', attr_name='y'\).*\('movie', 'y'\)"):
        fs["user", "y", torch.tensor([0])]
    with pytest.raises(KeyError, match="group_name=None"):
        fs.get_tensor(attr_name="x", index=torch.tensor([0]))


def test_pyg_graph_store_conversion_checks(tmp_path):
    # PyG's check puts one random graph under three edge types, in three layouts, and converts
    # them all. Here the three are the partitions' (read-only, served in every layout), so the
    # graph is partitioned with the three types and the same assertions made.
    edge_index = get_random_edge_index(100, 100, 300)
    adj = to_torch_coo_tensor(edge_index, size=(100, 100))
    coo = (adj.indices()[0], adj.indices()[1])
    adj = to_torch_csr_tensor(edge_index, size=(100, 100))
    csr = (adj.crow_indices(), adj.col_indices())
    adj = to_torch_csc_tensor(edge_index, size=(100, 100))
    csc = (adj.row_indices(), adj.ccol_indices())
    data = HeteroData()
    data["v"].x = torch.zeros(100, 1)
    types = [("v", "1", "v"), ("v", "2", "v"), ("v", "3", "v")]
    for edge_type in types:
        data[edge_type].edge_index = torch.stack(coo)
    graph_store = partita.pyg.GraphStore(partita.partition(data, tmp_path / "random", num_parts=2))

    row_dict, col_dict, perm_dict = graph_store.coo()
    assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
    for row, col, perm in zip(row_dict.values(), col_dict.values(), perm_dict.values()):
        assert torch.equal(row.sort()[0], coo[0].sort()[0])
        assert torch.equal(col.sort()[0], coo[1].sort()[0])
        assert perm is None

    row_dict, col_dict, perm_dict = graph_store.csr()
    assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
    for row, col in zip(row_dict.values(), col_dict.values()):
        assert torch.equal(row, csr[0])
        assert torch.equal(col.sort()[0], csr[1].sort()[0])

    row_dict, col_dict, perm_dict = graph_store.csc()
    assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
    for row, col in zip(row_dict.values(), col_dict.values()):
        assert torch.equal(row.sort()[0], csc[0].sort()[0])
        assert torch.equal(col, csc[1])

    out = graph_store.coo([types[0]])
    assert torch.equal(list(out[0].values())[0], coo[0])
    assert torch.equal(list(out[1].values())[0], coo[1])

    # The store argument: the partitions' types are served in every layout; nothing is added.
    key = EdgeAttr(edge_type=types[0], layout=EdgeLayout.CSR, is_sorted=False, size=(100, 100))
    out = graph_store.csr([types[0]], store=True)
    assert torch.equal(list(out[0].values())[0], csr[0])
    assert torch.equal(list(out[1].values())[0].sort()[0], csr[1].sort()[0])
    out = graph_store[key]
    assert torch.equal(out[0], csr[0])
    assert len(graph_store.get_all_edge_attrs()) == 9

    # Read-only, and a user's edge type beside them (PyG's test_graph_store).
    with pytest.raises(partita.UsageError, match=r"cannot put edge_type \('v', '1', 'v'\).*read-only"):
        graph_store.put_edge_index(coo, types[0], "coo", size=(100, 100))
    graph_store["edge_type", "coo"] = coo
    assert torch.equal(graph_store["edge_type", "coo"][0], coo[0])
    del graph_store["edge_type", "coo"]
    with pytest.raises(KeyError):
        graph_store["edge_type", "coo"]


def test_pyg_code_reads_the_stores(stores, source):
    # PyG's helpers for (feature_store, graph_store): sizes inferred from the stores (its
    # test_remote_backend_utils), the loaders' HeteroData filter, and the neighbour
    # sampler's set-up, which must see the HeteroData's CSC (its sampling needs pyg-lib), up
    # to the order within a neighbourhood (PyG's by source, the store's by edge id).
    from torch_geometric.loader.utils import filter_custom_hetero_store
    from torch_geometric.sampler import NeighborSampler

    fs, gs = stores[2]
    assert num_nodes(fs, gs, "movie") == 9742 and num_nodes(fs, gs, "user") == 610
    assert size(fs, gs, RATES) == (610, 9742)

    nodes = {"user": torch.tensor([5, 0, 609]), "movie": torch.tensor([100, 7])}
    rows, cols = {RATES: torch.tensor([0, 2])}, {RATES: torch.tensor([1, 0])}
    data = filter_custom_hetero_store(fs, gs, nodes, rows, cols, {})
    assert torch.equal(data["user"].x, source["user"].x[nodes["user"]])
    assert torch.equal(data["movie"].x, source["movie"].x[nodes["movie"]])
    assert torch.equal(data["movie"].y, source["movie"].y[nodes["movie"]])
    assert torch.equal(data[RATES].edge_index, torch.tensor([[0, 2], [1, 0]]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "without pyg-lib is deprecated"
        ours = NeighborSampler((fs, gs), num_neighbors=[5, 5])
        theirs = NeighborSampler(source, num_neighbors=[5, 5])
    assert ours.is_hetero and ours.num_nodes == theirs.num_nodes
    assert ours.colptr_dict.keys() == theirs.colptr_dict.keys()
    for edge_type in (RATES, RATED_BY):
        key = "__".join(edge_type)
        assert torch.equal(ours.colptr_dict[key], theirs.colptr_dict[key])
        colptr, width = ours.colptr_dict[key], source[edge_type[0]].num_nodes
        dst = torch.repeat_interleave(torch.arange(colptr.numel() - 1), colptr.diff())
        assert torch.equal((dst * width + ours.row_dict[key]).sort()[0], (dst * width + theirs.row_dict[key]).sort()[0])
        assert torch.equal(ours.row_dict[key], source[edge_type].edge_index[0][ours.perm[edge_type]])


def test_the_stores_agree_with_the_loaders_batches(stores, source):
    fs, gs = stores[2]
    loader = partita.pyg.NeighborLoader(gs.graph, num_neighbors=[3], input_nodes=("movie", "test"), batch_size=128,
                                        hetero=True)
    batch = next(iter(loader))
    for name in ("user", "movie"):
        assert torch.equal(fs[name, "x", batch[name].n_id], batch[name].x)
    row, col = gs[RATES, "coo"]
    e_id = batch[RATES].e_id
    assert torch.equal(torch.stack([row[e_id], col[e_id]]),
                       torch.stack([batch["user"].n_id[batch[RATES].edge_index[0]],
                                    batch["movie"].n_id[batch[RATES].edge_index[1]]]))

"""partita.pyg's loaders with hetero=True on a heterogeneous graph: HeteroData batches as PyG's
own loaders yield them on a HeteroData. MovieLens' ratings as a user's HeteroData (users and
movies, (user, rates, movie) and its reverse), partitioned from that object: each batch's
per-type fields are the homogeneous batch's split by type, n_id and e_id are the rows of the
user's HeteroData, a to_hetero() GraphSAGE trains on them, and the batches are the same
on one and two parts."""

import csv
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.nn import SAGEConv, to_hetero

import partita
import partita.pyg
from conftest import data_dir

RATES = ("user", "rates", "movie")
RATED_BY = ("movie", "rated_by", "user")


def movielens_hetero_data():
    """ml-latest-small as a PyG user builds it: users who rated (by userId) and every movie
    (by movieId); movie features the genres' multi-hot, user features seeded noise of the
    same width, a movie's class its first genre, and every fourth movie in the test split;
    each rating an edge of `rates` and of its reverse `rated_by`, timed by its timestamp."""
    folder = os.path.join(data_dir(), "movielens-small")
    with open(os.path.join(folder, "movies.csv"), newline="") as f:
        movies = sorted(((int(r["movieId"]), r["genres"].split("|")) for r in csv.DictReader(f)))
    with open(os.path.join(folder, "ratings.csv"), newline="") as f:
        ratings = [(int(r["userId"]), int(r["movieId"]), int(r["timestamp"])) for r in csv.DictReader(f)]
    genres = sorted({g for _, gs in movies for g in gs})
    users = sorted({u for u, _, _ in ratings})
    user_of = {u: i for i, u in enumerate(users)}
    movie_of = {m: i for i, (m, _) in enumerate(movies)}
    data = HeteroData()
    data["user"].x = torch.randn(len(users), len(genres), generator=torch.Generator().manual_seed(0))
    data["movie"].x = torch.tensor([[float(g in gs) for g in genres] for _, gs in movies])
    data["movie"].y = torch.tensor([genres.index(gs[0]) for _, gs in movies])
    rows = torch.arange(len(movies))
    data["movie"].train_mask = rows % 4 != 0
    data["movie"].test_mask = rows % 4 == 0
    edges = torch.tensor([[user_of[u], movie_of[m]] for u, m, _ in ratings]).t().contiguous()
    time = torch.tensor([t for _, _, t in ratings])
    data[RATES].edge_index, data[RATES].time = edges, time
    data[RATED_BY].edge_index, data[RATED_BY].time = edges.flip(0), time
    return data


@pytest.fixture(scope="module")
def source():
    return movielens_hetero_data()


@pytest.fixture(scope="module")
def movielens(tmp_path_factory, source):
    root = tmp_path_factory.mktemp("movielens-hetero")
    return {k: partita.partition(source, root / f"parts{k}", num_parts=k) for k in (1, 2)}


def offsets(source):
    """Where to_homogeneous() starts each node type's and each edge type's block."""
    nodes = np.cumsum([0] + [source[t].num_nodes for t in source.node_types])
    edges = np.cumsum([0] + [source[t].num_edges for t in source.edge_types])
    return dict(zip(source.node_types, nodes)), dict(zip(source.edge_types, edges))


def test_the_folder_numbers_each_type_as_the_heterodata_does(movielens, source):
    graph = movielens[2]
    assert graph.node_types == source.node_types and graph.edge_types == source.edge_types
    assert graph.num_nodes_by_type == [source[t].num_nodes for t in source.node_types]
    assert graph.num_edges_by_type == [source[t].num_edges for t in source.edge_types]
    assert graph.labelled_node_types == ["movie"]
    node_offset, _ = offsets(source)
    for t, name in enumerate(source.node_types):
        rows = graph._nodes_of_type(t)
        np.testing.assert_array_equal(rows, node_offset[name] + np.arange(source[name].num_nodes))
        np.testing.assert_array_equal(graph._node_index_in_type()[rows], np.arange(source[name].num_nodes))


def node_loaders(graph, **kwargs):
    args = dict(num_neighbors=[4, 3], batch_size=256, shuffle=True, seed=5, **kwargs)
    return (partita.pyg.NeighborLoader(graph, input_nodes=("movie", "train"), hetero=True, **args),
            partita.pyg.NeighborLoader(graph, input_nodes="train", **args))


def check_split_by_type(graph, source, hetero, homo):
    """`hetero` is `homo` (the same sampled subgraph, in to_homogeneous() layout) by type."""
    node_offset, edge_offset = offsets(source)
    for t, name in enumerate(graph.node_types):
        mine = homo.node_type == t
        store = hetero[name]
        assert torch.equal(store.n_id + int(node_offset[name]), homo.n_id[mine])
        assert torch.equal(store.x, homo.x[mine])
        hop_of = torch.repeat_interleave(torch.arange(len(homo.num_sampled_nodes)),
                                         torch.tensor(homo.num_sampled_nodes))
        assert store.num_sampled_nodes == torch.bincount(hop_of[mine], minlength=len(hop_of.unique())).tolist()
    assert torch.equal(hetero["movie"].y, homo.y[homo.node_type == graph.node_types.index("movie")])
    assert "y" not in hetero["user"]
    global_of = {name: hetero[name].n_id + int(node_offset[name]) for name in graph.node_types}
    for k, edge_type in enumerate(graph.edge_types):
        mine = homo.edge_type == k
        store = hetero[edge_type]
        src, _, dst = edge_type
        ends = torch.stack([global_of[src][store.edge_index[0]], global_of[dst][store.edge_index[1]]])
        assert torch.equal(ends, homo.n_id[homo.edge_index[:, mine]])
        assert torch.equal(store.e_id + int(edge_offset[edge_type]), homo.e_id[mine])
    assert sum(sum(hetero[t].num_sampled_edges) for t in graph.edge_types) == sum(homo.num_sampled_edges)


def test_node_batches_are_the_homogeneous_batches_by_type(movielens, source):
    graph = movielens[2]
    hetero, homo = node_loaders(graph)
    assert hetero.input_type == "movie" and len(hetero) == len(homo)
    batches = 0
    for one, two in zip(hetero, homo):
        check_split_by_type(graph, source, one, two)
        assert one["movie"].batch_size == two.batch_size
        assert torch.equal(one["movie"].input_id, two.input_id)
        batches += 1
    assert batches == len(homo)


def test_n_id_and_e_id_are_rows_of_the_users_heterodata(movielens, source):
    graph = movielens[2]
    loader, _ = node_loaders(graph)
    seeds = torch.flatten(torch.nonzero(source["movie"].train_mask))
    seen = []
    for batch in loader:
        for name in source.node_types:
            assert torch.equal(batch[name].x, source[name].x[batch[name].n_id])
        assert torch.equal(batch["movie"].y, source["movie"].y[batch["movie"].n_id])
        size = batch["movie"].batch_size
        assert torch.equal(batch["movie"].n_id[:size], seeds[batch["movie"].input_id])
        assert batch["movie"].num_sampled_nodes[0] == size and batch["user"].num_sampled_nodes[0] == 0
        for edge_type in source.edge_types:
            src, _, dst = edge_type
            store = batch[edge_type]
            ends = torch.stack([batch[src].n_id[store.edge_index[0]], batch[dst].n_id[store.edge_index[1]]])
            assert torch.equal(ends, source[edge_type].edge_index[:, store.e_id])
        seen.append(batch["movie"].input_id)
    assert torch.equal(torch.sort(torch.cat(seen)).values, torch.arange(seeds.numel()))


class GraphSAGE(torch.nn.Module):
    """Two SAGEConv layers, as PyG's heterogeneous tutorial writes the model to_hetero()
    converts (PyG's own GraphSAGE model does not trace under this torch.fx)."""

    def __init__(self, hidden, out):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), out)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


def test_a_to_hetero_graphsage_trains_on_the_batches(movielens, source):
    torch.manual_seed(0)
    graph = movielens[2]
    loader, _ = node_loaders(graph)
    model = to_hetero(GraphSAGE(32, int(source["movie"].y.max()) + 1), source.metadata(), aggr="sum")
    batch = next(iter(loader))
    with torch.no_grad():  # the lazy layers learn their input widths
        model(batch.x_dict, batch.edge_index_dict)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        for batch in loader:
            optimizer.zero_grad()
            size = batch["movie"].batch_size
            out = model(batch.x_dict, batch.edge_index_dict)["movie"][:size]
            loss = F.cross_entropy(out, batch["movie"].y[:size])
            loss.backward()
            # The last layer's messages into users reach no movie's output; the rest have gradients.
            grads = [p.grad for name, p in model.named_parameters() if not name.startswith("conv2.movie__rated_by")]
            assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
            optimizer.step()
            losses.append(float(loss))
    first, last = np.mean(losses[:len(loader)]), np.mean(losses[-len(loader):])
    print(f"to_hetero() GraphSAGE on MovieLens' genres: mean loss {first:.3f} in epoch 1, {last:.3f} in epoch 3")
    assert last < first


def link_loaders(graph, source, **kwargs):
    rows = torch.arange(0, source[RATES].num_edges, 7)
    edges, time = source[RATES].edge_index[:, rows], source[RATES].time[rows]
    node_offset, _ = offsets(source)
    args = dict(num_neighbors=[3, 2], batch_size=1024, shuffle=True, seed=3, time_attr="time",
                edge_label_time=time, disjoint=True, **kwargs)
    hetero = partita.pyg.LinkNeighborLoader(graph, edge_label_index=(RATES, edges), hetero=True, **args)
    homo = partita.pyg.LinkNeighborLoader(
        graph, edge_label_index=(RATES, edges + torch.tensor([[node_offset["user"]], [node_offset["movie"]]])), **args)
    return hetero, homo, edges, time


def test_link_batches_are_the_homogeneous_batches_by_type(movielens, source):
    graph = movielens[2]
    hetero, homo, edges, time = link_loaders(graph, source, neg_sampling="binary")
    for one, two in zip(hetero, homo):
        check_split_by_type(graph, source, one, two)
        store = one[RATES]
        positives = store.input_id.numel()
        assert torch.equal(store.input_id, two.input_id)
        ends = torch.stack([one["user"].n_id[store.edge_label_index[0]], one["movie"].n_id[store.edge_label_index[1]]])
        assert torch.equal(ends[:, :positives], edges[:, store.input_id])
        assert bool((ends[0] < source["user"].num_nodes).all() and (ends[1] < source["movie"].num_nodes).all())
        assert torch.equal(store.edge_label, two.edge_label)
        assert torch.equal(store.edge_label_time, two.edge_label_time)
        assert torch.equal(store.edge_label_time[:positives], time[store.input_id])
        # Disjoint: each node's tree, the positive it came from.
        for name in graph.node_types:
            assert int(one[name].batch.max()) < positives


def test_triplets_put_their_indices_on_the_end_types(movielens, source):
    graph = movielens[1]
    hetero, homo, edges, _ = link_loaders(graph, source, neg_sampling={"mode": "triplet", "amount": 2})
    for one, two in zip(hetero, homo):
        ids = one[RATES].input_id
        ends = torch.stack([one["user"].n_id[one["user"].src_index], one["movie"].n_id[one["movie"].dst_pos_index]])
        assert torch.equal(ends, edges[:, ids])
        assert one["movie"].dst_neg_index.shape == (ids.numel(), 2)
        node_offset, _ = offsets(source)
        negatives = one["movie"].n_id[one["movie"].dst_neg_index] + int(node_offset["movie"])
        assert torch.equal(negatives, two.n_id[two.dst_neg_index])
        assert torch.equal(one["user"].seed_time, two.seed_time) and torch.equal(one["movie"].seed_time, two.seed_time)


def hetero_fields(batch):
    out = {}
    for store in batch.node_stores + batch.edge_stores:
        for name, value in store.items():
            out[(store._key, name)] = value.numpy() if isinstance(value, torch.Tensor) else value
    return out


def test_batches_are_the_same_on_one_and_two_parts(movielens, source):
    assert not np.array_equal(movielens[1].global_ids(), movielens[2].global_ids())
    for make in (lambda g: node_loaders(g)[0], lambda g: link_loaders(g, source, neg_sampling="binary")[0]):
        epochs = []
        for k in (1, 2):
            loader = make(movielens[k])
            loader.epoch = 1
            epochs.append([hetero_fields(b) for b in loader])
        assert len(epochs[0]) == len(epochs[1]) > 1
        for one, two in zip(*epochs):
            assert one.keys() == two.keys()
            for key in one:
                np.testing.assert_array_equal(one[key], two[key], err_msg=str(key))


def test_rows_on_a_graph_whose_types_interleave(tmp_path):
    # AIFB numbers entities, classes and literals as its triples name them, not in blocks: a
    # type's rows follow its nodes' original ids.
    graph = partita.partition(os.path.join(data_dir(), "aifb"), tmp_path / "aifb", num_parts=2, format="ntriples")
    types = graph._node_types()
    assert not np.all(np.diff(types) >= 0)
    hetero = partita.pyg.NeighborLoader(graph, num_neighbors=[5, 5], batch_size=32, input_nodes="train",
                                        shuffle=True, seed=4, hetero=True)
    homo = partita.pyg.NeighborLoader(graph, num_neighbors=[5, 5], batch_size=32, input_nodes="train",
                                      shuffle=True, seed=4)
    assert hetero.input_type == "entity"
    for one, two in zip(hetero, homo):
        for t, name in enumerate(graph.node_types):
            rows = one[name].n_id.numpy()
            np.testing.assert_array_equal(graph._nodes_of_type(t)[rows], two.n_id[two.node_type == t].numpy())
        assert torch.equal(one["entity"].y, two.y[two.node_type == graph.node_types.index("entity")])
        for k, edge_type in enumerate(graph.edge_types):
            assert one[edge_type].edge_index.shape[1] == int((two.edge_type == k).sum())


def test_node_types_of_different_widths_keep_their_own(tmp_path, source):
    # Users with 5 features of their own, movies their 20 genres: the folder pads users to
    # 20 columns, and batches and stores hand each type back its own.
    data = source.clone()
    data["user"].x = torch.randn(data["user"].num_nodes, 5, generator=torch.Generator().manual_seed(1))
    graph = partita.partition(data, tmp_path / "parts", num_parts=2)
    widths = [data[t].x.shape[1] for t in graph.node_types]
    assert graph.feature_dims_by_type == widths and graph.feature_dim == max(widths)
    hetero, homo = node_loaders(graph)
    for batch, flat in zip(hetero, homo):
        for t, name in enumerate(graph.node_types):
            assert torch.equal(batch[name].x, data[name].x[batch[name].n_id])
            padded = flat.x[flat.node_type == t]
            assert torch.equal(padded[:, :widths[t]], batch[name].x)
            assert not padded[:, widths[t]:].any()
    fs, _ = partita.pyg.stores(graph)
    rows = torch.tensor([3, 0, 7])
    assert torch.equal(fs["user", "x", rows], data["user"].x[rows])
    assert fs.get_tensor_size(group_name="user", attr_name="x") == torch.Size([data["user"].num_nodes, 5])
    assert torch.equal(fs["movie", "x", rows], data["movie"].x[rows])
    fs.close()


def test_bad_input_names_the_problem(movielens, cora_parts, source):
    graph = movielens[1]
    with pytest.raises(partita.UsageError, match="hetero=True is for heterogeneous graphs"):
        partita.pyg.NeighborLoader(cora_parts[1], num_neighbors=[2], hetero=True)
    with pytest.raises(partita.UsageError, match=r"node type 'book' is not one of the graph's: 'user', 'movie'"):
        partita.pyg.NeighborLoader(graph, num_neighbors=[2], input_nodes=("book", None), hetero=True)
    with pytest.raises(TypeError, match=r"input_nodes must be a node type or \(node type, nodes\)"):
        partita.pyg.NeighborLoader(graph, num_neighbors=[2], hetero=True)
    with pytest.raises(partita.UsageError, match=r"row 610 \(at position 1\) is outside the 610 nodes of type 'user'"):
        partita.pyg.NeighborLoader(graph, num_neighbors=[2], input_nodes=("user", [0, 610]), hetero=True)
    with pytest.raises(partita.UsageError, match=r"mask of 3 entries; type 'movie' has 9742 nodes"):
        partita.pyg.NeighborLoader(graph, num_neighbors=[2], input_nodes=("movie", [True] * 3), hetero=True)
    with pytest.raises(partita.UsageError, match=r"edge_label_index\[1\]: row 9742 .* of type 'movie'"):
        partita.pyg.LinkNeighborLoader(graph, num_neighbors=[2], edge_label_index=(RATES, torch.tensor([[0], [9742]])),
                                       hetero=True)
    with pytest.raises(TypeError, match="hetero must be a bool"):
        partita.pyg.NeighborLoader(graph, num_neighbors=[2], input_nodes="train", hetero="yes")
    bad = HeteroData()
    bad["a"].x, bad["b"].x = torch.zeros(2, 3), torch.zeros(2)
    bad["a", "to", "b"].edge_index = torch.tensor([[0], [1]])
    with pytest.raises(partita.UsageError, match=r"data\['b'\].x has shape \(2,\), expected \(num_nodes, features\)"):
        partita.partition(bad, "unused-output")

"""partita.pyg.LinkNeighborLoader on a heterogeneous graph: MovieLens' ratings as the edges of
(user, rates, movie), their negatives among the users and the movies, batches in the
homogeneous layout (node_type, edge_type) and the same on any number of parts."""

import csv
import os

import numpy as np
import pytest
import torch

import partita
import partita.pyg
from conftest import assert_arrays_equal, data_dir
from partita import _partita

RATES = ("user", "rates", "movie")


@pytest.fixture(scope="module")
def movielens(tmp_path_factory):
    """ml-latest-small with 5% of its ratings held out for validation and 10% for test, in 1
    and 2 METIS parts."""
    root = tmp_path_factory.mktemp("movielens")
    path = os.path.join(data_dir(), "movielens-small")
    return {k: partita.partition(path, root / f"parts{k}", num_parts=k, format="movielens",
                                 holdout={"val": 0.05, "test": 0.1}, split_seed=1) for k in (1, 2)}


@pytest.fixture(scope="module")
def ratings():
    """The ratings as (user, movie) pairs of original ids, read here from the CSV files: the
    users who rated, by userId, then every movie of movies.csv, by movieId."""
    folder = os.path.join(data_dir(), "movielens-small")
    with open(os.path.join(folder, "ratings.csv"), newline="") as f:
        rows = [(int(r["userId"]), int(r["movieId"])) for r in csv.DictReader(f)]
    with open(os.path.join(folder, "movies.csv"), newline="") as f:
        movies = sorted(int(r["movieId"]) for r in csv.DictReader(f))
    users = sorted({u for u, _ in rows})
    user_of = {u: i for i, u in enumerate(users)}
    movie_of = {m: len(users) + i for i, m in enumerate(movies)}
    return {"pairs": {(user_of[u], movie_of[m]) for u, m in rows}, "num_ratings": len(rows),
            "num_users": len(users), "num_nodes": len(users) + len(movies)}


def pairs_of(edge_index):
    return {(int(a), int(b)) for a, b in np.asarray(edge_index).T}


def test_the_edge_types_splits_are_the_ratings(movielens, ratings):
    graph = movielens[2]
    assert graph.is_hetero and RATES in graph.edge_types and graph.num_nodes == ratings["num_nodes"]
    splits = [_partita._edge_split(graph, s, graph.edge_types.index(RATES))["edge_index"] for s in ("train", "val", "test")]
    assert sum(s.shape[1] for s in splits) == ratings["num_ratings"]
    assert set().union(*map(pairs_of, splits)) == ratings["pairs"]


def check_types(graph, batch):
    """The batch's node and edge types: one per node and edge, an edge's joining its ends'."""
    names = graph.node_types
    assert batch.node_type.shape == batch.n_id.shape and batch.edge_type.shape == (batch.edge_index.shape[1],)
    src_type = torch.tensor([names.index(s) for s, _, _ in graph.edge_types])
    dst_type = torch.tensor([names.index(d) for _, _, d in graph.edge_types])
    assert torch.equal(batch.node_type[batch.edge_index[0]], src_type[batch.edge_type])
    assert torch.equal(batch.node_type[batch.edge_index[1]], dst_type[batch.edge_type])


def test_binary_batches_hold_ratings_and_negatives_of_the_right_types(movielens, ratings):
    graph = movielens[2]
    user, movie = graph.node_types.index("user"), graph.node_types.index("movie")
    train = _partita._edge_split(graph, "train", graph.edge_types.index(RATES))["edge_index"]
    loader = partita.pyg.LinkNeighborLoader(graph, num_neighbors=[3, 2], edge_label_index=(RATES, "train"),
                                            batch_size=4096, shuffle=True, seed=3, neg_sampling="binary")
    assert loader.edge_type == RATES and len(loader) == -(-train.shape[1] // 4096)
    positions = []
    for batch in loader:
        positives = batch.input_id.numel()
        positions.append(batch.input_id.numpy())
        assert batch.edge_label_index.shape == (2, 2 * positives)
        assert batch.edge_label.tolist() == [1.0] * positives + [0.0] * positives
        # The labels' ends are the batch's seeds: positions in n_id, at its head.
        assert int(batch.edge_label_index.max()) < batch.num_sampled_nodes[0]
        ends = batch.n_id[batch.edge_label_index]
        np.testing.assert_array_equal(ends[:, :positives].numpy(), train[:, batch.input_id.numpy()])
        assert pairs_of(ends[:, :positives]) <= ratings["pairs"]
        # Negatives: a user and a movie, like the positives.
        assert bool((batch.node_type[batch.edge_label_index[0]] == user).all())
        assert bool((batch.node_type[batch.edge_label_index[1]] == movie).all())
        negatives = ends[:, positives:]
        assert bool((negatives[0] < ratings["num_users"]).all() and (negatives[1] >= ratings["num_users"]).all())
        check_types(graph, batch)
        assert batch.x.shape == (batch.num_nodes, graph.feature_dim)
    np.testing.assert_array_equal(np.sort(np.concatenate(positions)), np.arange(train.shape[1]))


def test_triplet_negatives_are_movies(movielens, ratings):
    graph = movielens[2]
    movie = graph.node_types.index("movie")
    test = _partita._edge_split(graph, "test", graph.edge_types.index(RATES))["edge_index"]
    loader = partita.pyg.LinkNeighborLoader(graph, num_neighbors=[3], edge_label_index=(RATES, "test"),
                                            batch_size=2048, neg_sampling={"mode": "triplet", "amount": 3}, seed=2)
    drawn = 0
    for batch in loader:
        positives = batch.input_id.numel()
        assert batch.dst_neg_index.shape == (positives, 3)
        assert bool((batch.node_type[batch.dst_neg_index] == movie).all())
        ends = torch.stack([batch.n_id[batch.src_index], batch.n_id[batch.dst_pos_index]])
        np.testing.assert_array_equal(ends.numpy(), test[:, batch.input_id.numpy()])
        assert pairs_of(ends) <= ratings["pairs"]
        drawn += batch.dst_neg_index.numel()
    assert drawn == 3 * test.shape[1]


def link_epoch(loader):
    out = []
    for batch in loader:
        fields = {k: getattr(batch, k).numpy() for k in ("n_id", "edge_index", "e_id", "x", "node_type", "edge_type",
                                                          "input_id", "edge_label", "edge_label_time")}
        fields["label_ends"] = batch.n_id[batch.edge_label_index].numpy()
        out.append(fields)
    return out


def test_batches_are_the_same_on_one_and_two_parts(movielens):
    # Two parts number the nodes otherwise than one does.
    assert not np.array_equal(movielens[1].global_ids(), movielens[2].global_ids())
    epochs = []
    for k in (1, 2):
        loader = partita.pyg.LinkNeighborLoader(movielens[k], num_neighbors=[4, 3], edge_label_index=(RATES, "val"),
                                                batch_size=512, shuffle=True, seed=7, neg_sampling="binary",
                                                time_attr="time", disjoint=True)
        loader.epoch = 1
        epochs.append(link_epoch(loader))
    assert len(epochs[0]) == len(epochs[1]) == -(-5042 // 512)
    for one, two in zip(*epochs):
        assert one.keys() == two.keys()
        for key in one:
            assert_arrays_equal(one[key], two[key], err_msg=key)


def test_an_edge_type_alone_is_its_training_edges(movielens):
    graph = movielens[1]
    loader = partita.pyg.LinkNeighborLoader(graph, num_neighbors=[2], edge_label_index=RATES, batch_size=50000)
    train = _partita._edge_split(graph, "train", graph.edge_types.index(RATES))["edge_index"]
    assert loader._loader.num_edges == train.shape[1]
    batch = next(iter(loader))
    np.testing.assert_array_equal(batch.n_id[batch.edge_label_index].numpy(), train[:, :50000])


def test_bad_input_names_the_problem(movielens):
    graph = movielens[1]
    edges = torch.from_numpy(_partita._edge_split(graph, "val", 0)["edge_index"][:, :10].copy())

    def make(edge_label_index, **kwargs):
        return partita.pyg.LinkNeighborLoader(graph, num_neighbors=[2], edge_label_index=edge_label_index, **kwargs)

    with pytest.raises(partita.UsageError, match=r"edge type \('user', 'likes', 'movie'\) is not one of the graph's"):
        make((("user", "likes", "movie"), edges))
    with pytest.raises(TypeError, match=r"must be \(edge type, edges\)"):
        make((("user", "movie"), edges))
    with pytest.raises(partita.UsageError, match="heterogeneous: give edge_label_index as \\(edge type, edges\\)"):
        make(edges)
    with pytest.raises(partita.UsageError, match="heterogeneous: give edge_label_index as"):
        make("train")
    with pytest.raises(partita.UsageError, match=r"has shape \(3, 10\); expected \(2, num_edges\)"):
        make((RATES, torch.zeros(3, 10, dtype=torch.long)))
    with pytest.raises(partita.UsageError, match=r"edge_label_index\[0\]\[0\] is node .* of type 'movie'; edge type "
                                                 r"\(user, rates, movie\) needs 'user'"):
        make((RATES, edges.flip(0)))
    with pytest.raises(partita.UsageError, match=r"edge_label_index\[1\]"):
        make((RATES, torch.stack([edges[0], edges[0]])))
    with pytest.raises(partita.UsageError, match="edge_label_index\\[1\\]"):
        make((RATES, torch.tensor([[0], [graph.num_nodes]])))
    with pytest.raises(partita.UsageError, match="edge type 5 is not one of the 2 edge types"):
        _partita._edge_split(graph, "train", 5)

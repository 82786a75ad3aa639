"""Links of a PyG HeteroData held out by time when partitioned from Python: a time split, and
a streaming one that keeps them as history, of one edge type and its ToUndirected reverse."""

import csv
import os

import numpy as np
import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import HeteroData

import partita
import partita.pyg
from conftest import data_dir
from partita import _partita

RATES = ("user", "rates", "movie")
REV = ("movie", "rev_rates", "user")


@pytest.fixture(scope="module")
def ratings():
    """MovieLens latest-small as a PyG user builds it: movies (by movieId) with their genres
    multi-hot and a 0, users (by userId) with zeros and a 1, each rating a (user, rates,
    movie) edge with its timestamp, and ToUndirected's reverse edges."""
    folder = os.path.join(data_dir(), "movielens-small")
    with open(os.path.join(folder, "movies.csv"), newline="") as f:
        movies = [(int(r["movieId"]), r["genres"].split("|")) for r in csv.DictReader(f)]
    with open(os.path.join(folder, "ratings.csv"), newline="") as f:
        rows = [(int(r["userId"]), int(r["movieId"]), int(r["timestamp"])) for r in csv.DictReader(f)]
    genres = sorted({g for _, gs in movies for g in gs})
    movie_of = {m: i for i, (m, _) in enumerate(movies)}
    users = sorted({u for u, _, _ in rows})
    user_of = {u: i for i, u in enumerate(users)}
    data = HeteroData()
    data["user"].x = torch.zeros(len(users), len(genres) + 1)
    data["user"].x[:, -1] = 1.0
    data["movie"].x = torch.tensor([[float(g in gs) for g in genres] + [0.0] for _, gs in movies])
    data[RATES].edge_index = torch.tensor([[user_of[u] for u, _, _ in rows], [movie_of[m] for _, m, _ in rows]])
    data[RATES].time = torch.tensor([t for _, _, t in rows])
    return T.ToUndirected()(data)


def split_of(graph, split, edge_type):
    s = _partita._edge_split(graph, split, graph.edge_types.index(edge_type))
    return s["edge_index"], s["time"]


def test_links_held_out_by_time_are_the_latest_and_leave_both_directions(tmp_path, ratings):
    graph = partita.partition(ratings, tmp_path / "parts", num_parts=2,
                              holdout={"val": 0.05, "test": 0.1, "by": "time", "edge_type": RATES})
    users = ratings["user"].num_nodes
    (train, train_t), (val, val_t), (test, test_t) = (split_of(graph, s, RATES) for s in ("train", "val", "test"))
    links = ratings[RATES].edge_index.shape[1]
    assert (val.shape[1], test.shape[1]) == (round(0.05 * links), round(0.1 * links))
    assert train.shape[1] + val.shape[1] + test.shape[1] == links
    # Train on the past, predict the future: ties by edge order, so <= at the boundaries.
    assert train_t.max() <= val_t.min() and val_t.max() <= test_t.min()
    # A held-out rating is in neither edge type of the graph (ToUndirected's reverse is its reverse).
    held_out = {(int(u), int(m)) for u, m in np.concatenate([val, test], axis=1).T}
    reverse, _ = split_of(graph, "train", REV)
    assert graph.num_edges == 2 * train.shape[1]
    assert not held_out & {(int(u), int(m)) for m, u in reverse.T}
    assert all(u < users <= m for u, m in held_out)


def test_a_streaming_time_split_keeps_the_held_out_links_as_history(tmp_path, ratings):
    graph = partita.partition(ratings, tmp_path / "parts", num_parts=1,
                              holdout={"test": 0.1, "by": "time", "history": "keep", "edge_type": RATES})
    test, test_t = split_of(graph, "test", RATES)
    train, train_t = split_of(graph, "train", RATES)
    assert graph.num_edges == ratings.num_edges  # nothing left the graph
    assert test.shape[1] == round(0.1 * ratings[RATES].edge_index.shape[1])
    assert train_t.max() <= test_t.min()
    # A temporal loader samples edges at or before a seed's time, as PyG's does: a test
    # link's time less one keeps the link itself out of its own neighbourhood, and every
    # link before it in.
    edge_time = ratings.to_homogeneous().time
    label_time = torch.from_numpy(test_t) - 1
    loader = partita.pyg.LinkNeighborLoader(graph, num_neighbors=[10, 5], edge_label_index=(RATES, "test"),
                                            edge_label_time=label_time, time_attr="time", disjoint=True,
                                            batch_size=256, shuffle=True)
    batches = 0
    for batch in loader:
        tree_time = label_time[batch.input_id][batch.batch[batch.edge_index[1]]]
        assert (edge_time[batch.e_id] <= tree_time).all()
        batches += 1
        if batches == 5:
            break
    assert batches == 5 and batch.e_id.numel() > 0


def test_bad_input_names_the_problem(tmp_path, ratings):
    def error(source, **kwargs):
        with pytest.raises((partita.UsageError, TypeError)) as e:
            partita.partition(source, tmp_path / "bad", num_parts=1, overwrite=True, **kwargs)
        return str(e.value)

    assert "holdout['by'] is 'newest'" in error(ratings, holdout={"test": 0.1, "by": "newest"})
    assert "needs holdout['by'] = 'time'" in error(ratings, holdout={"test": 0.1, "history": "keep"})
    assert "give a 'val' or 'test' fraction too" in error(ratings, holdout={"by": "time"})
    assert "edge_type (user, likes, movie) is not one of the graph's: (user, rates, movie)" in error(
        ratings, holdout={"test": 0.1, "edge_type": ("user", "likes", "movie")})
    assert "must be (source type, relation, destination type)" in error(ratings, holdout={"test": 0.1,
                                                                                         "edge_type": "rates"})
    masked = ratings.clone()
    masked["movie"].train_mask = torch.arange(masked["movie"].num_nodes) < 10  # a mask: accepted
    masked["user"].train_mask = torch.tensor([0, 1])  # indices, not a mask of the users
    assert "data['user'].train_mask must be a bool mask of its" in error(masked)

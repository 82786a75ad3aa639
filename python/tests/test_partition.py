"""Data in: a PyG Data or an npy folder partitioned from Python, existing folders opened."""

import os
import subprocess

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import partita
import partita.pyg


def cora_data(cora):
    """Cora as a PyG user holds it, with masks of a split of our own."""
    rng = np.random.default_rng(0)
    order = rng.permutation(cora.num_nodes)
    masks = {}
    for name, nodes in (("train", order[:300]), ("val", order[300:600]), ("test", order[600:1100])):
        mask = torch.zeros(cora.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(nodes)] = True
        masks[name] = mask
    return Data(x=torch.from_numpy(cora.x), edge_index=torch.from_numpy(cora.edge_index), y=torch.from_numpy(cora.y),
                train_mask=masks["train"], val_mask=masks["val"], test_mask=masks["test"])


def test_a_pyg_data_partitioned_from_python(tmp_path, cora):
    data = cora_data(cora)
    graph = partita.partition(data, tmp_path / "parts", num_parts=2, seed=4)
    assert isinstance(graph, partita.Graph)
    assert (graph.num_nodes, graph.num_edges, graph.num_parts) == (2708, data.num_edges, 2)
    assert (graph.feature_dim, graph.num_classes, graph.has_labels) == (1433, 7, True)
    assert graph.path == os.path.abspath(tmp_path / "parts")
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(graph.split(split), getattr(data, f"{split}_mask").nonzero().view(-1).numpy())
    # Node ids are the Data's rows: features, labels and edges come back as the Data has them.
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[5, 5], batch_size=100, input_nodes=data.train_mask,
                                        shuffle=True)
    for batch in loader:
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.y, data.y[batch.n_id])
        assert torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index])
    # An existing folder opens as it was written, and is replaced only when asked.
    again = partita.Graph(str(tmp_path / "parts"))
    np.testing.assert_array_equal(again.global_ids(), graph.global_ids())
    replaced = partita.partition(data, tmp_path / "parts", num_parts=1, overwrite=True)
    assert replaced.num_parts == 1


def test_an_npy_folder_partitioned_from_python(tmp_path, cora):
    folder = tmp_path / "npy"
    folder.mkdir()
    np.save(folder / "edge_index.npy", np.ascontiguousarray(cora.edge_index))
    np.save(folder / "x.npy", cora.x.astype(np.float64))  # converted to float32 by the reader
    np.save(folder / "y.npy", cora.y)
    np.save(folder / "train_idx.npy", np.arange(0, 2708, 10, dtype=np.int64))
    graph = partita.partition(str(folder), str(tmp_path / "parts"), num_parts=3, method="random", seed=1,
                              transforms=["normalize_features"])
    assert graph.num_parts == 3 and graph.num_nodes == 2708
    np.testing.assert_array_equal(graph.split("train"), np.arange(0, 2708, 10))
    assert len(graph.split("test")) == 0
    batch = next(iter(partita.pyg.NeighborLoader(graph, num_neighbors=[3], batch_size=50, input_nodes="train")))
    rows = cora.x[batch.n_id.numpy()]
    expected = rows / np.maximum(rows.sum(axis=1, keepdims=True), 1)  # PyG NormalizeFeatures: by max(row sum, 1)
    np.testing.assert_allclose(batch.x.numpy(), expected, rtol=1e-6)


def test_data_that_is_not_a_graph_is_refused(tmp_path):
    with pytest.raises(partita.UsageError, match=r"edge_index has shape \(1, 3\), expected \(2, E\)"):
        partita.partition(Data(edge_index=torch.tensor([[0, 1, 2]])), tmp_path / "out")
    with pytest.raises(partita.UsageError, match="must be a one-dimensional bool mask"):
        partita.partition(Data(edge_index=torch.tensor([[0], [1]]), train_mask=torch.tensor([0, 1])), tmp_path / "out")
    # The reader's own checks: an edge to a node the features do not have.
    with pytest.raises(partita.Error, match="edge_index"):
        partita.partition(Data(x=torch.zeros(3, 2), edge_index=torch.tensor([[0, 1], [1, 5]])), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_folder_written_by_the_cli_opens_as_partitioned_from_python(tmp_path, cora_path, cora_parts):
    cli = os.environ.get("PARTITA_CLI", "")
    if not os.access(cli, os.X_OK):
        pytest.fail(f"PARTITA_CLI={cli!r} is not the partita binary (ctest sets it to the build's)")
    out = tmp_path / "cli-parts"
    subprocess.run([cli, "--log-level", "warn", "partition", "-i", cora_path, "-f", "linqs", "-o", str(out), "-k", "2"],
                   check=True, capture_output=True, timeout=120)
    graph, ours = partita.Graph(str(out)), cora_parts[2]
    assert (graph.num_nodes, graph.num_edges, graph.num_parts) == (ours.num_nodes, ours.num_edges, 2)
    np.testing.assert_array_equal(graph.global_ids(), ours.global_ids())
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(graph.split(split), ours.split(split))

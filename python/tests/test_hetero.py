"""A heterogeneous graph through partita.pyg.NeighborLoader: batches carry node_type and
edge_type, as HeteroData.to_homogeneous() lays them out, so PyG's RGCNConv trains on AIFB."""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn import RGCNConv

import partita
import partita.pyg
from conftest import data_dir


@pytest.fixture(scope="module")
def aifb(tmp_path_factory):
    """AIFB (RDF entity classification: 8,285 entities, each predicate an edge type and its
    inverse another) in 1 and 2 METIS parts, with its published training and test sets."""
    root = tmp_path_factory.mktemp("aifb")
    path = os.path.join(data_dir(), "aifb")
    return {k: partita.partition(path, root / f"parts{k}", num_parts=k, format="ntriples") for k in (1, 2)}


def test_batches_carry_node_and_edge_types_the_same_on_any_number_of_parts(aifb):
    graph = aifb[2]
    assert graph.is_hetero and len(graph.edge_types) > 0
    relations = {relation for _, relation, _ in graph.edge_types}
    assert all(relation.startswith("^") or "^" + relation in relations for relation in relations)
    epochs = []
    for k in (1, 2):
        loader = partita.pyg.NeighborLoader(aifb[k], num_neighbors=[5, 5], batch_size=32, input_nodes="train",
                                            shuffle=True, seed=4)
        epochs.append([(b.n_id.numpy(), b.edge_index.numpy(), b.node_type.numpy(), b.edge_type.numpy())
                       for b in loader])
    assert len(epochs[0]) == len(epochs[1]) == len(loader)
    for one, two in zip(*epochs):
        for g, w in zip(one, two):
            np.testing.assert_array_equal(g, w)
    for n_id, edge_index, node_type, edge_type in epochs[1]:
        assert node_type.shape == n_id.shape and edge_type.shape == (edge_index.shape[1],)
        assert 0 <= edge_type.min() and edge_type.max() < len(graph.edge_types)
        assert 0 <= node_type.min() and node_type.max() < len(graph.node_types)
        # An edge's type joins the types of its ends.
        names = graph.node_types
        for (src, dst), t in zip(edge_index.T[:200], edge_type[:200]):
            src_type, _, dst_type = graph.edge_types[t]
            assert (names[node_type[src]], names[node_type[dst]]) == (src_type, dst_type)


class RGCN(torch.nn.Module):
    """An entity classifier after Schlichtkrull et al.: a learnt 16-wide row per node (the
    graph has no features), then two R-GCN layers with basis decomposition. (PyG's RGCNConv over
    one-hot inputs, as the paper's first layer, materialises a [relations, nodes, 16] weight
    every step: seconds a step here.)"""

    def __init__(self, num_nodes, num_relations, num_classes):
        super().__init__()
        self.embedding = torch.nn.Embedding(num_nodes, 16)
        self.conv1 = RGCNConv(16, 16, num_relations, num_bases=30)
        self.conv2 = RGCNConv(16, num_classes, num_relations, num_bases=30)

    def forward(self, n_id, edge_index, edge_type):
        x = F.relu(self.conv1(self.embedding(n_id), edge_index, edge_type))
        return self.conv2(x, edge_index, edge_type)


def test_pygs_rgcnconv_classifies_aifbs_entities(aifb):
    # examples/aifb.yaml's settings (R-GCN paper: 95.8% on AIFB's 36 test entities; chance 0.25).
    torch.manual_seed(1)
    graph = aifb[2]
    train = partita.pyg.NeighborLoader(graph, num_neighbors=[-1, -1], batch_size=140, input_nodes="train",
                                       shuffle=True, seed=1)
    test = partita.pyg.NeighborLoader(graph, num_neighbors=[-1, -1], batch_size=140, input_nodes="test", seed=1)
    model = RGCN(graph.num_nodes, len(graph.edge_types), graph.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0005)
    for _ in range(50):
        model.train()
        for batch in train:
            optimizer.zero_grad()
            out = model(batch.n_id, batch.edge_index, batch.edge_type)[:batch.batch_size]
            F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
            optimizer.step()
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in test:
            out = model(batch.n_id, batch.edge_index, batch.edge_type)[:batch.batch_size]
            correct += int((out.argmax(-1) == batch.y[:batch.batch_size]).sum())
            total += batch.batch_size
    accuracy = correct / total
    print(f"RGCNConv (PyG) on AIFB through partita.pyg.NeighborLoader: test accuracy {accuracy:.3f} of {total}")
    assert total == 36
    assert accuracy >= 0.80

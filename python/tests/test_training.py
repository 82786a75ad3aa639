"""PyG models on Partita's batches, unchanged: GraphSAGE trained on Cora, trim_to_layer."""

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn.models import GraphSAGE
from torch_geometric.utils import trim_to_layer

import partita.pyg


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader:
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            correct += int((out.argmax(dim=-1) == batch.y[:batch.batch_size]).sum())
            total += batch.batch_size
    return correct / total


def test_graphsage_on_cora_reaches_the_accuracy_of_partitas_own(cora_parts):
    # The settings of examples/cora.yaml, whose built-in GraphSAGE reaches 0.79 test accuracy
    # on this split (seeds 1-3); PyG's GraphSAGE on Cora: 79-80%.
    torch.manual_seed(1)
    graph = cora_parts[2]
    train = partita.pyg.NeighborLoader(graph, num_neighbors=[25, 10], batch_size=32, input_nodes="train",
                                       shuffle=True, seed=1)
    test = partita.pyg.NeighborLoader(graph, num_neighbors=[25, 10], batch_size=256, input_nodes="test", seed=1)
    model = GraphSAGE(graph.feature_dim, hidden_channels=128, num_layers=2, out_channels=graph.num_classes,
                      dropout=0.6)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=0.001)
    for _ in range(20):
        model.train()
        for batch in train:
            optimizer.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            optimizer.step()
    accuracy = evaluate(model, test)
    print(f"GraphSAGE (PyG) on Cora through partita.pyg.NeighborLoader: test accuracy {accuracy:.3f}")
    assert accuracy >= 0.70


def test_trim_to_layer_runs_and_keeps_the_seeds_outputs(cora_parts):
    torch.manual_seed(0)
    graph = cora_parts[2]
    loader = partita.pyg.NeighborLoader(graph, num_neighbors=[8, 4, 2], batch_size=64, input_nodes="val")
    batch = next(iter(loader))
    model = GraphSAGE(graph.feature_dim, hidden_channels=16, num_layers=3, out_channels=graph.num_classes).eval()
    with torch.no_grad():
        full = model(batch.x, batch.edge_index)[:batch.batch_size]
        trimmed = model(batch.x, batch.edge_index, num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                        num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]
    assert torch.allclose(full, trimmed, atol=1e-5)
    # One layer's trim by hand: the last hop's nodes and edges go.
    x, edge_index, _ = trim_to_layer(1, batch.num_sampled_nodes, batch.num_sampled_edges, batch.x, batch.edge_index)
    assert x.shape[0] == batch.num_nodes - batch.num_sampled_nodes[-1]
    assert edge_index.shape[1] == batch.edge_index.shape[1] - batch.num_sampled_edges[-1]
    assert int(edge_index.max()) < x.shape[0]
    np.testing.assert_array_equal(x.numpy(), batch.x[:x.shape[0]].numpy())

"""One rank of the data-parallel tests (test_distributed.py), run as its own process.

    python3 distributed_rank.py train HEAD TLS_DIR GROUP GRAPH OUT.pt
        PyG's GraphSAGE on this rank's share of the graph's train seeds, gradients averaged
        with partita.average_gradients at every step; writes the parameters to OUT.pt.
    python3 distributed_rank.py join HEAD TLS_DIR GROUP OUT.json
        joins the group and writes what happened: {"ok": true} or the exception's type and
        message.
    python3 distributed_rank.py lose HEAD TLS_DIR GROUP OUT.json
        joins the group; rank 1 then ends its process, and rank 0 writes what its next
        allreduce raised.

The rank and world size come from PARTITA_RANK and PARTITA_WORLD_SIZE, as a job's script
gets them. The training itself (`train`) is shared with the tests' one-process reference.
"""

import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch_geometric.nn.models import GraphSAGE

import partita
import partita.pyg

EPOCHS = 2
BATCH_SIZE = 35  # 2 batches of each rank's 70 seeds an epoch


def share(graph, rank, world_size):
    return graph.split("train")[rank::world_size]


def new_model(graph):
    torch.manual_seed(0)  # every rank starts from the same parameters
    return GraphSAGE(graph.feature_dim, hidden_channels=32, num_layers=2, out_channels=graph.num_classes)


def loader(graph, seeds):
    return partita.pyg.NeighborLoader(graph, num_neighbors=[10, 5], batch_size=BATCH_SIZE, input_nodes=seeds,
                                      shuffle=True, seed=3)


def loss_of(model, batch):
    out = model(batch.x, batch.edge_index)[:batch.batch_size]
    return F.cross_entropy(out, batch.y[:batch.batch_size])


def train(graph, rank, world_size):
    model = new_model(graph)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batches = loader(graph, share(graph, rank, world_size))
    for _ in range(EPOCHS):
        for batch in batches:
            optimizer.zero_grad()
            loss_of(model, batch).backward()
            partita.average_gradients(model)
            optimizer.step()
    return model


def main(argv):
    mode, head, tls_dir, group = argv[1:5]
    torch.set_num_threads(1)
    partita.init(head, tls_dir=tls_dir, threads=2)
    try:
        if mode == "train":
            graph_path, out = argv[5:7]
            partita.init_process_group(group=group, timeout=60, op_timeout=60)
            graph = partita.Graph(graph_path)
            model = train(graph, partita.get_rank(), partita.get_world_size())
            torch.save(model.state_dict(), out)
            partita.destroy_process_group()
        elif mode == "join":
            out = argv[5]
            try:
                partita.init_process_group(group=group, timeout=20, op_timeout=20)
                result = {"ok": True}
                partita.destroy_process_group()
            except Exception as e:  # noqa: BLE001: the test checks which
                result = {"ok": False, "type": type(e).__name__, "message": str(e)}
            with open(out, "w") as f:
                json.dump(result, f)
        elif mode == "lose":  # rank 1 leaves at once, without a word; rank 0 then sums
            out = argv[5]
            partita.init_process_group(group=group, timeout=60, op_timeout=30)
            if partita.get_rank() == 1:
                os._exit(0)
            time.sleep(1)
            try:
                partita.allreduce_(torch.ones(1000))
                result = {"ok": True}
            except Exception as e:  # noqa: BLE001: the test checks which
                result = {"ok": False, "type": type(e).__name__, "message": str(e)}
            with open(out, "w") as f:
                json.dump(result, f)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    finally:
        partita.shutdown()


def one_process_reference(graph, world_size, epochs=EPOCHS):
    """The ranks' training in one process: the same replicas, each share's gradients averaged here."""
    model = new_model(graph)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loaders = [loader(graph, share(graph, r, world_size)) for r in range(world_size)]
    for _ in range(epochs):
        for batches in zip(*loaders):
            grads = []
            for batch in batches:
                optimizer.zero_grad()
                loss_of(model, batch).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for p, *gs in zip(model.parameters(), *grads):
                total = gs[0]
                for g in gs[1:]:
                    total = total + g
                p.grad = total / world_size
            optimizer.step()
    return model.state_dict()


if __name__ == "__main__":
    main(sys.argv)

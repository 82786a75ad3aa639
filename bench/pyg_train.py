#!/usr/bin/env python3
"""PyG on Partita's loader, next to Partita's own C++ trainer and loader, on one graph.

From the project root, with the `partita` CLI and the Python package built:

    PYTHONPATH=build/python:../shared/third_party/pytorch_geometric-2.5.3 /usr/bin/python3 \\
        bench/pyg_train.py --partita build/tools/partita --workdir /tmp/pyg-train-bench

The graph is the benchmarks' shared one (BENCHMARKS.md, "The shared benchmark graph"):
`partita generate rmat --nodes N --a 0.45 --b 0.22 --c 0.22 --undirected --features 128
--classes 16 --seed S` into WORKDIR/graph, once (a stamp of the options beside it), which
`partita bench train` and `partita bench loader` then partition into WORKDIR/train and
WORKDIR/loader on their first run and reuse after. The model: GraphSAGE, one layer per
fanout, hidden --hidden, mean aggregation, dropout 0.5, Adam (lr 0.01, the trainer's
default), cross-entropy on the seeds.

Each round runs, interleaved (--modes picks them):
  (a)  `partita bench train --no-daemons`: Partita's C++ trainer in one process, 1 partition,
       --cores torch threads, its sampler working beside it; the median step time of --steps
       steps after 2 warm-up (between two steps' reports to its driver), and its step profile
       (batches sampled beforehand, compute alone: lay out, forward, backward, optimiser);
  (b)  torch_geometric.nn.models.GraphSAGE in this process on partita.pyg.NeighborLoader over
       WORKDIR/loader/parts1 (its training split): forward, loss on the seeds, backward,
       optimiser step; the median time from one step's end to the next (taking the batch
       included) over --steps steps after the warm-up, and its compute part alone;
  (b') the same with PyG's trim_to_layer (num_sampled_nodes_per_hop and
       num_sampled_edges_per_hop), which skips the outer hops' rows layer by layer, as
       Partita's trainer does;
  (c)  the loader alone: `partita bench loader --repeat 1`, its configuration (a) (one
       sampler over the 1-part folder, drained by a C++ thread), then partita.pyg.NeighborLoader
       on the same folder, seeds, seed and epoch (the same batches: python/tests), each batch a
       torch_geometric Data, and the native module's batches alone (numpy arrays, no Data):
       2 warm-up batches, then batches for --seconds (at most --batches).
Medians over the rounds are printed with nodes and edges per batch, and the ratios (b)/(a),
(b')/(a) and (c) Python/C++. CPU ms per batch in (c): the measuring process, every thread
(the actors run in it, as in bench loader's (a)).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import partita
import partita.pyg

WARMUP = 2
LEARNING_RATE = 0.01  # the trainer's default (training/job_config.h)
MODES = ("a", "b", "b'", "c")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"pyg_train: {' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def shared_graph(args):
    """WORKDIR/graph, generated unless the same options made it already; its path."""
    path = os.path.join(args.workdir, "graph")
    stamp = os.path.join(args.workdir, "graph-params.txt")
    params = (f"rmat nodes {args.nodes} a 0.45 b 0.22 c 0.22 undirected features {args.features} classes "
              f"{args.classes} seed {args.seed}\n")
    if os.path.exists(stamp) and os.path.exists(os.path.join(path, "edge_index.npy")):
        with open(stamp) as f:
            if f.read() == params:
                return path
    os.makedirs(args.workdir, exist_ok=True)
    run([args.partita, "--log-level", "warn", "generate", "rmat", "--nodes", str(args.nodes), "--a", "0.45", "--b",
         "0.22", "--c", "0.22", "--undirected", "--features", str(args.features), "--classes", str(args.classes),
         "--seed", str(args.seed), "-o", path, "--overwrite"])
    with open(stamp, "w") as f:
        f.write(params)
    return path


def match(pattern, text, what, command):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit(f"pyg_train: no {what} in the output of {' '.join(command)}:\n{text}")
    return m


def cpp_train_round(args, graph):
    """(a): median s/step end to end, profile step ms, nodes and edges per batch."""
    command = [args.partita, "--log-level", "warn", "bench", "train", "--input", graph, "--workdir",
               os.path.join(args.workdir, "train"), "--hidden", str(args.hidden), "--fanouts", args.fanouts,
               "--batch-size", str(args.batch_size), "--cores", str(args.cores), "--steps", str(WARMUP + args.steps),
               "--profile-steps", str(args.profile_steps), "--seed", str(args.seed), "--no-daemons"]
    out = run(command)
    sizes = match(r"^per batch: (\d+) nodes, (\d+) edges", out, "batch sizes", command)
    profile = match(r"^step \(sum\)\s+([\d.]+)", out, "profiled step", command)
    row = match(r"^\(a\) 1 partition, 1 trainer, in one process\s+[\d.]+\s+\d+\s+[\d.]+\s+([\d.]+)", out,
                "configuration (a)", command)
    return {"step": float(row.group(1)), "profile": float(profile.group(1)) / 1000,
            "nodes": int(sizes.group(1)), "edges": int(sizes.group(2))}


def pyg_train_round(loader, model, optimizer, epoch, trim, args):
    """(b) or (b'): median s/step (from one step's end to the next), its compute part, and
    nodes and edges per batch, over --steps steps after the warm-up."""
    if len(loader) < WARMUP + args.steps:
        sys.exit(f"pyg_train: an epoch has only {len(loader)} batches: lower --steps")
    loader.epoch = epoch
    batches = iter(loader)
    model.train()
    steps, compute, nodes, edges = [], [], [], []
    last = time.perf_counter()
    for k in range(WARMUP + args.steps):
        batch = next(batches)
        begin = time.perf_counter()
        optimizer.zero_grad()
        if trim:
            out = model(batch.x, batch.edge_index, num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                        num_sampled_edges_per_hop=batch.num_sampled_edges)
        else:
            out = model(batch.x, batch.edge_index)
        loss = F.cross_entropy(out[:batch.batch_size], batch.y[:batch.batch_size])
        loss.backward()
        optimizer.step()
        end = time.perf_counter()
        if k >= WARMUP:
            steps.append(end - last)
            compute.append(end - begin)
            nodes.append(batch.num_nodes)
            edges.append(batch.edge_index.shape[1])
        last = end
        del batch, out, loss  # the feature buffer goes back to the sampler, as after the trainer's step
    return {"step": statistics.median(steps), "compute": statistics.median(compute),
            "nodes": statistics.median(nodes), "edges": statistics.median(edges)}


def cpp_loader_round(args, graph):
    """(c), C++: batches/s, CPU ms/batch, nodes and edges per batch of bench loader's (a)."""
    command = [args.partita, "--log-level", "warn", "bench", "loader", "--input", graph, "--workdir",
               os.path.join(args.workdir, "loader"), "--fanouts", args.fanouts, "--batch-size", str(args.batch_size),
               "--batches", str(args.batches), "--seconds", str(args.seconds), "--prefetch", str(args.prefetch),
               "--seed", str(args.seed), "--repeat", "1"]
    out = run(command)
    row = match(r"^\(a\) 1 partition, in-process, one sampler\s+([\d.]+)\s+[\d.]+\s+([\d.]+)", out,
                "configuration (a)", command)
    sizes = match(r"^per batch \(a\): (\d+) nodes, (\d+) edges", out, "batch sizes", command)
    return {"rate": float(row.group(1)), "cpu": float(row.group(2)), "nodes": int(sizes.group(1)),
            "edges": int(sizes.group(2))}


def python_loader_round(next_batch, size_of, available, args):
    """(c), Python: batches/s, CPU ms/batch, nodes and edges per batch of an epoch's first
    batches, as bench loader's (a) measures: at most --batches after the warm-up, for --seconds."""
    if available <= WARMUP:
        sys.exit(f"pyg_train: an epoch has only {available} batches: lower --batch-size")
    for _ in range(WARMUP):
        next_batch()
    count = nodes = edges = 0
    cpu, wall = time.process_time(), time.perf_counter()
    while count < min(args.batches, available - WARMUP) and time.perf_counter() - wall < args.seconds:
        batch = next_batch()
        n, e = size_of(batch)
        count, nodes, edges = count + 1, nodes + n, edges + e
        del batch  # its feature buffer goes back to the sampler, as after a training step
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rate": count / wall, "cpu": 1000 * cpu / count, "nodes": nodes / count, "edges": edges / count}


def pyg_loader_round(loader, args):
    loader.epoch = 0  # bench loader's epoch
    batches = iter(loader)
    return python_loader_round(lambda: next(batches), lambda b: (b.num_nodes, b.edge_index.shape[1]), len(loader),
                               args)


def native_loader_round(loader, args):
    native = loader._loader
    native.start_epoch(0)
    return python_loader_round(native.next, lambda b: (len(b["n_id"]), b["edge_index"].shape[1]), len(native), args)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partita", default="build/tools/partita", help="the partita CLI")
    p.add_argument("--workdir", required=True, help="keeps the graph and its partitions between runs")
    p.add_argument("--modes", default=",".join(MODES), help="which of a, b, b', c to run, comma-separated")
    p.add_argument("--nodes", type=int, default=1000000)
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--cores", type=int, default=2, help="torch threads, in (a) and here")
    p.add_argument("--steps", type=int, default=10, help="timed training steps per round, after 2 warm-up")
    p.add_argument("--profile-steps", type=int, default=4, help="(a)'s step profile")
    p.add_argument("--batches", type=int, default=40, help="(c): measured batches per round, at most")
    p.add_argument("--seconds", type=float, default=1.5, help="(c): measurement window per round")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            p.error(f"--modes: {m!r} is not one of {', '.join(MODES)}")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.cores)
    graph_dir = shared_graph(args)
    partita.init()
    rows = {name: [] for name in ("a", "b", "b'", "c-cpp", "c-pyg", "c-native")}
    loader = None
    models = {}
    epoch = 1  # training rounds take epochs 1, 2, ... (the loader rounds replay epoch 0)
    for r in range(args.rounds):
        if "a" in args.modes:
            rows["a"].append(cpp_train_round(args, graph_dir))
            print(f"  round {r + 1}: {round_summary(rows, 'a')}", flush=True)
        if "c" in args.modes:
            rows["c-cpp"].append(cpp_loader_round(args, graph_dir))
        elif loader is None:
            cpp_loader_round(args, graph_dir)  # the loader's folder is bench loader's 1-part one: made by its first run
        if loader is None:
            graph = partita.Graph(os.path.join(args.workdir, "loader", "parts1"))
            fanouts = [int(f) for f in args.fanouts.split(",")]
            loader = partita.pyg.NeighborLoader(graph, num_neighbors=fanouts, batch_size=args.batch_size,
                                                input_nodes="train", shuffle=True, seed=args.seed,
                                                prefetch=args.prefetch)
            for trim in ("b", "b'"):
                torch.manual_seed(args.seed)
                model = torch_geometric_sage(graph.feature_dim, args.hidden, len(fanouts), graph.num_classes)
                models[trim] = (model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE))
            print(f"{graph_dir}: {graph.num_nodes} nodes, {graph.num_edges} directed edges, {graph.feature_dim} "
                  f"float32 features, {graph.num_classes} classes; GraphSAGE hidden {args.hidden}, fanouts "
                  f"[{args.fanouts}], batch {args.batch_size}, {args.cores} torch threads, prefetch {args.prefetch}; "
                  f"training: {WARMUP} warm-up + {args.steps} steps; loader: {WARMUP} warm-up batches, then for "
                  f"{args.seconds} s (at most {args.batches}); medians of {args.rounds} interleaved rounds\n",
                  flush=True)
        for mode in ("b", "b'"):
            if mode in args.modes:
                model, optimizer = models[mode]
                rows[mode].append(pyg_train_round(loader, model, optimizer, epoch, mode == "b'", args))
                epoch += 1
                print(f"  round {r + 1}: {round_summary(rows, mode)}", flush=True)
        if "c" in args.modes:
            rows["c-pyg"].append(pyg_loader_round(loader, args))
            rows["c-native"].append(native_loader_round(loader, args))
        if "c" in args.modes:
            print(f"  round {r + 1}: " + "  ".join(round_summary(rows, name) for name in ("c-cpp", "c-pyg", "c-native")),
                  flush=True)
    partita.shutdown()
    report(rows)


def torch_geometric_sage(in_channels, hidden, layers, classes):
    from torch_geometric.nn.models import GraphSAGE
    return GraphSAGE(in_channels, hidden, num_layers=layers, out_channels=classes, dropout=0.5, aggr="mean")


def round_summary(rows, name):
    last = rows[name][-1]
    sizes = f"{last['nodes']:.0f} nodes, {last['edges']:.0f} edges"
    if name.startswith("c-"):
        return f"({name}) {last['rate']:.1f} batches/s, {last['cpu']:.0f} CPU ms/batch ({sizes})"
    return f"({name}) {1000 * last['step']:.0f} ms/step ({sizes})"


def med(rows, name, key):
    return statistics.median(row[key] for row in rows[name])


def report(rows):
    if rows["a"] or rows["b"] or rows["b'"]:
        print(f"\n{'training (medians of the rounds)':<64} {'ms/step':>8} {'vs (a)':>7} {'compute ms':>11} "
              f"{'nodes/batch':>12} {'edges/batch':>12}")
        base = med(rows, "a", "step") if rows["a"] else None
        if rows["a"]:
            print(f"{'(a) Partita C++ trainer, end to end (its sampler beside it)':<64} {1000 * base:>8.1f} "
                  f"{1.0:>7.2f} {1000 * med(rows, 'a', 'profile'):>11.1f} {med(rows, 'a', 'nodes'):>12.0f} "
                  f"{med(rows, 'a', 'edges'):>12.0f}")
        for name, label in (("b", "(b) PyG GraphSAGE on partita.pyg.NeighborLoader"),
                            ("b'", "(b') the same with trim_to_layer")):
            if not rows[name]:
                continue
            step = med(rows, name, "step")
            ratio = f"{step / base:.2f}" if base else "-"
            print(f"{label:<64} {1000 * step:>8.1f} {ratio:>7} {1000 * med(rows, name, 'compute'):>11.1f} "
                  f"{med(rows, name, 'nodes'):>12.0f} {med(rows, name, 'edges'):>12.0f}")
        print("compute ms: (a) its step profile (batches sampled beforehand); (b), (b') the step without taking "
              "the batch")
    if rows["c-cpp"]:
        base = med(rows, "c-cpp", "rate")
        print(f"\n{'loader alone (medians; vs C++: ratio of the medians)':<64} {'batches/s':>10} {'vs C++':>7} "
              f"{'CPU ms/batch':>13} {'nodes/batch':>12} {'edges/batch':>12}")
        for name, label in (("c-cpp", "(c) C++ consumer: `partita bench loader` (a)"),
                            ("c-pyg", "(c) Python: partita.pyg.NeighborLoader, torch_geometric Data"),
                            ("c-native", "(c) Python: the native module's batches (numpy, no Data)")):
            print(f"{label:<64} {med(rows, name, 'rate'):>10.1f} {med(rows, name, 'rate') / base:>7.2f} "
                  f"{med(rows, name, 'cpu'):>13.1f} {med(rows, name, 'nodes'):>12.0f} {med(rows, name, 'edges'):>12.0f}")


if __name__ == "__main__":
    main()

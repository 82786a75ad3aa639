#!/usr/bin/env python3
"""partita.pyg.NeighborLoader alone, next to the C++ loader benchmark on the same graph.

From the project root, with the `partita` CLI and the Python package built:

    PYTHONPATH=build/python:../shared/third_party/pytorch_geometric-2.5.3 /usr/bin/python3 \\
        bench/pyg_loader.py --partita build/tools/partita --workdir /tmp/pyg-loader-bench

Every round runs `partita bench loader --repeat 1` (which generates RMAT and partitions it into
WORKDIR/parts1 and parts2 on its first run, and reuses them after) and reads its configuration
(a): one sampler actor over the whole graph in one process, its batches taken by a C++ thread
(SamplerClient: epoch, then next), 2 warm-up batches, then batches for --seconds. Then the
same here over WORKDIR/parts1: its training nodes, the same fanouts, batch size, prefetch,
seed and epoch, so the very same batches (python/tests: the loader of a split is the
trainer's epoch), taken by Python:
  - NeighborLoader: each batch a torch_geometric Data (what a training loop gets);
  - native: the module's batches as numpy arrays, no Data (the binding's own cost).
The rounds interleave the three, so load from elsewhere on the machine spreads over all of
them; medians are printed, with nodes and edges per batch and CPU ms per batch (this
process's, all threads: the actors run in it too, as in (a)).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import partita
import partita.pyg

WARMUP = 2


def cpp_round(args):
    command = [args.partita, "bench", "loader", "--workdir", args.workdir, "--nodes", str(args.nodes),
               "--avg-degree", str(args.avg_degree), "--features", str(args.features), "--fanouts", args.fanouts,
               "--batch-size", str(args.batch_size), "--batches", str(args.batches), "--seconds", str(args.seconds),
               "--prefetch", str(args.prefetch), "--seed", str(args.seed), "--repeat", "1"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    row = re.search(r"^\(a\) 1 partition, in-process, one sampler\s+([\d.]+)\s+[\d.]+\s+([\d.]+)", out, re.M)
    sizes = re.search(r"^per batch \(a\): (\d+) nodes, (\d+) edges", out, re.M)
    if not row or not sizes:
        sys.exit(f"pyg_loader: no configuration (a) in the output of {' '.join(command)}:\n{out}")
    return float(row.group(1)), float(row.group(2)), int(sizes.group(1)), int(sizes.group(2))


def python_round(next_batch, size_of, available, args):
    """Batches/s, CPU ms/batch, nodes and edges per batch of an epoch's first batches, as (a)
    measures: at most --batches of the `available` ones after the warm-up, for --seconds."""
    if available <= WARMUP:
        sys.exit(f"pyg_loader: an epoch has only {available} batches: lower --batch-size")
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
    return count / wall, 1000 * cpu / count, nodes / count, edges / count


def pyg_round(loader, args):
    loader.epoch = 0  # (a)'s epoch
    batches = iter(loader)
    return python_round(lambda: next(batches), lambda b: (b.num_nodes, b.edge_index.shape[1]), len(loader), args)


def native_round(loader, args):
    native = loader._loader
    native.start_epoch(0)
    return python_round(native.next, lambda b: (len(b["n_id"]), b["edge_index"].shape[1]), len(native), args)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partita", default="build/tools/partita", help="the partita CLI")
    p.add_argument("--workdir", required=True, help="keeps the generated graph (shared with `partita bench loader`)")
    p.add_argument("--nodes", type=int, default=1 << 20)
    p.add_argument("--avg-degree", type=float, default=20)
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=40, help="measured batches per round, at most")
    p.add_argument("--seconds", type=float, default=1.5, help="measurement window per round")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    partita.init()
    rows = {"cpp": [], "pyg": [], "native": []}
    loader = None
    for r in range(args.rounds):
        rows["cpp"].append(cpp_round(args))
        if loader is None:  # the folder exists once the first C++ round made it
            graph = partita.Graph(os.path.join(args.workdir, "parts1"))
            fanouts = [int(f) for f in args.fanouts.split(",")]
            loader = partita.pyg.NeighborLoader(graph, num_neighbors=fanouts, batch_size=args.batch_size,
                                                input_nodes="train", shuffle=True, seed=args.seed,
                                                prefetch=args.prefetch)
            print(f"{graph.path}: {graph.num_nodes} nodes, {graph.num_edges} directed edges, {graph.feature_dim} "
                  f"float32 features; fanouts [{args.fanouts}], batch {args.batch_size}, prefetch {args.prefetch}; "
                  f"{WARMUP} warm-up batches, then for {args.seconds} s (at most {args.batches} batches); "
                  f"medians of {args.rounds} interleaved rounds\n")
        rows["pyg"].append(pyg_round(loader, args))
        rows["native"].append(native_round(loader, args))
        print(f"round {r + 1}: C++ (a) {rows['cpp'][-1][0]:.1f}  NeighborLoader {rows['pyg'][-1][0]:.1f}  "
              f"native {rows['native'][-1][0]:.1f} batches/s", flush=True)
    partita.shutdown()

    def med(name, k):
        return statistics.median(row[k] for row in rows[name])

    base = med("cpp", 0)
    print(f"\n{'configuration (medians; vs C++: ratio of the medians)':<58} {'batches/s':>10} {'vs C++':>7} {'CPU ms/batch':>13} "
          f"{'nodes/batch':>12} {'edges/batch':>12}")
    for name, label in (("cpp", "C++ consumer: `partita bench loader` (a)"),
                        ("pyg", "Python: partita.pyg.NeighborLoader, torch_geometric Data"),
                        ("native", "Python: the native module's batches (numpy, no Data)")):
        print(f"{label:<58} {med(name, 0):>10.1f} {med(name, 0) / base:>7.2f} {med(name, 1):>13.1f} "
              f"{med(name, 2):>12.0f} {med(name, 3):>12.0f}")


if __name__ == "__main__":
    main()

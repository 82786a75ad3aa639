"""A Python job's script (test_python_jobs.py runs it with `partita submit -- python3
job_script.py ...` from a working folder that holds it and distributed_rank.py).

    python3 job_script.py GRAPH EPOCHS OUT.pt [--pause-after E] [--pid-dir DIR] [--fail CODE]

PyG's GraphSAGE on this rank's share of the graph's train seeds (distributed_rank.py's
training), gradients averaged at every step. Rank 0 saves the model and the optimiser after
every epoch with partita.save_checkpoint; every rank starts from the last checkpoint, and
replays its loader's earlier epochs so that the epochs it trains draw what an uninterrupted
run draws. Rank 0 writes the final parameters to OUT.pt.

--pause-after E: in the job's first attempt (PARTITA_RESTART 0), every rank waits after
epoch E's checkpoint until it is killed (at most PAUSE_DEADLINE s, then exits with 3): a
test kills a node meanwhile. --pid-dir: each rank writes its pid to DIR/rank<R>-<restart>-<node>.pid
first. --fail CODE: exit at once with CODE, after a line on stderr.
"""

import argparse
import os
import sys
import time

import torch

import partita
import distributed_rank

PAUSE_DEADLINE = 300


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("graph")
    parser.add_argument("epochs", type=int)
    parser.add_argument("out")
    parser.add_argument("--pause-after", type=int, default=0)
    parser.add_argument("--pid-dir")
    parser.add_argument("--fail", type=int, default=0)
    args = parser.parse_args()
    rank, restart = int(os.environ["PARTITA_RANK"]), int(os.environ["PARTITA_RESTART"])
    if args.pid_dir:
        name = f"rank{rank}-{restart}-{os.environ['PARTITA_NODE']}.pid"
        with open(os.path.join(args.pid_dir, name + ".partial"), "w") as f:
            f.write(str(os.getpid()))
        os.replace(os.path.join(args.pid_dir, name + ".partial"), os.path.join(args.pid_dir, name))
    if args.fail:
        print(f"rank {rank} fails on purpose", file=sys.stderr, flush=True)
        sys.exit(args.fail)
    torch.set_num_threads(1)
    partita.init(threads=2)
    partita.init_process_group(timeout=120, op_timeout=120)
    world = partita.get_world_size()
    graph = partita.Graph(args.graph)
    model = distributed_rank.new_model(graph)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batches = distributed_rank.loader(graph, distributed_rank.share(graph, rank, world))
    start = 0
    saved = partita.load_checkpoint()
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        start = saved["epoch"]
    print(f"rank {rank} of {world} starts after epoch {start} (restart {restart})", flush=True)
    for _ in range(start):
        for _ in batches:
            pass
    for epoch in range(start, args.epochs):
        for batch in batches:
            optimizer.zero_grad()
            distributed_rank.loss_of(model, batch).backward()
            partita.average_gradients(model)
            optimizer.step()
        if rank == 0:
            partita.save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1})
        print(f"epoch {epoch + 1} done", flush=True)
        if epoch + 1 == args.pause_after and restart == 0:
            print("pausing", flush=True)
            time.sleep(PAUSE_DEADLINE)
            sys.exit(3)
    if rank == 0:
        torch.save(model.state_dict(), args.out)
    partita.destroy_process_group()
    partita.shutdown()


if __name__ == "__main__":
    main()

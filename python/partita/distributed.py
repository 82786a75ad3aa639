"""Data-parallel training across processes: one rank per process, gradients averaged
through Partita's allreduce group.

Every rank builds the same model from the same seed, trains on its own share of the seeds,
and averages the gradients before each optimiser step, so every rank applies the same
update (as PyTorch's DistributedDataParallel does)::

    import partita, partita.distributed as dist
    partita.init(address="HEAD:PORT")            # a cluster's head: the ranks meet there
    dist.init_process_group()                    # rank, world size: PARTITA_RANK, PARTITA_WORLD_SIZE
    torch.manual_seed(0)
    model = GraphSAGE(...)
    for batch in loader_of_my_share:
        optimizer.zero_grad()
        loss_of(model, batch).backward()
        dist.average_gradients(model)            # one allreduce of every gradient
        optimizer.step()
    dist.destroy_process_group()

The ranks find each other through the head (``partita.init(address=...)`` in each rank's
process; its certificate a node's), which introduces the ranks of a group once all have
arrived; their buffers are then summed over a ring of direct connections between the ranks'
processes. A world of size 1 needs neither a cluster nor ``partita.init()``.

Errors: ``partita.UsageError`` for a bad argument (a rank outside the world, a tensor that
is not float32 or not contiguous, a world over 1 without a cluster), ``partita.Error`` when
the group cannot form (another rank gave another world size, a rank did not come within
`timeout`) or a sum fails (a rank was lost, `op_timeout` passed), and
``partita.RuntimeClosedError`` once the group was destroyed or the runtime shut down.
"""

import os

import numpy as np

from . import _partita
from ._partita import RuntimeClosedError, UsageError

__all__ = ["allreduce_", "average_gradients", "destroy_process_group", "get_rank", "get_world_size",
           "init_process_group", "is_initialized"]

_group = None
_destroyed = False


def _int_setting(value, env, default, name):
    if value is None:
        text = os.environ.get(env)
        if text is None or text == "":
            return default
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"init_process_group: {env}={text!r} is not an integer ({name})") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"init_process_group: {name} must be an int, not {type(value).__name__}")
    return value


def init_process_group(rank=None, world_size=None, group=None, *, timeout=300.0, op_timeout=60.0):
    """Joins this process to the group as `rank` of `world_size` and returns once every rank
    has joined and their ring is up.

    `rank` and `world_size` default to $PARTITA_RANK and $PARTITA_WORLD_SIZE (0 and 1 when
    unset), `group` to $PARTITA_GROUP ("default" when unset): a Python job's ranks
    (``partita submit -- python3 SCRIPT``) get all three, the group's name unique to the job
    and its attempt. Ranks of one job give the same `group` name and world size; two jobs on
    one cluster use two names. `timeout` (seconds) bounds the wait for the other ranks and the
    ring's set-up; `op_timeout` each allreduce. Raises UsageError when a group is
    initialised already in this process, for a rank outside 0..world_size-1, and for a
    world size over 1 when the runtime is not connected to a cluster
    (``partita.init(address=...)``); Error naming the problem when the group cannot form."""
    global _group, _destroyed
    if _group is not None:
        raise UsageError(f"init_process_group: this process is rank {_group.rank} of group {_group.group!r} already "
                         f"(destroy_process_group() first)")
    rank = _int_setting(rank, "PARTITA_RANK", 0, "rank")
    world_size = _int_setting(world_size, "PARTITA_WORLD_SIZE", 1, "world_size")
    if group is None:
        group = os.environ.get("PARTITA_GROUP") or "default"
    if not isinstance(group, str):
        raise TypeError(f"init_process_group: group must be a str, not {type(group).__name__}")
    _group = _partita.ProcessGroup(group, rank, world_size, float(timeout), float(op_timeout))
    _destroyed = False


def is_initialized():
    return _group is not None


def _current(what):
    if _group is None:
        if _destroyed:
            raise RuntimeClosedError(f"{what}: the process group was destroyed (destroy_process_group()); "
                                     f"init_process_group() makes a new one")
        raise UsageError(f"{what}: no process group in this process; call init_process_group() first")
    return _group


def get_rank():
    return _current("get_rank()").rank


def get_world_size():
    return _current("get_world_size()").world_size


def destroy_process_group():
    """Leaves the group: this rank's allreduce member stops (another rank's next allreduce
    fails, naming this rank). Does nothing without a group."""
    global _group, _destroyed
    if _group is None:
        return
    group, _group = _group, None
    _destroyed = True
    group.destroy()


def _array(tensor, what):
    """`tensor`'s memory as a numpy array (no copy), or UsageError/TypeError naming why not."""
    if isinstance(tensor, np.ndarray):
        return tensor
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: expected a torch.Tensor or a numpy array, not {type(tensor).__name__}")
    if tensor.dtype != torch.float32:
        raise UsageError(f"{what}: the tensor is {tensor.dtype}; only torch.float32 is summed")
    if tensor.device.type != "cpu":
        raise UsageError(f"{what}: the tensor is on {tensor.device}; only CPU tensors are summed")
    if not tensor.is_contiguous():
        raise UsageError(f"{what}: the tensor is not contiguous (sum tensor.contiguous(), then copy it back)")
    return tensor.detach().numpy()


def allreduce_(tensor):
    """Replaces `tensor` (float32, contiguous, on the CPU; or such a numpy array) with its
    element-wise sum over the ranks, in place, and returns it. Every rank must call it with a
    tensor of the same number of elements, in the same order."""
    group = _current("allreduce_")
    group.allreduce_sum(_array(tensor, "allreduce_"))
    return tensor


def average_gradients(module):
    """Averages the gradients of `module`'s parameters over the ranks, in one allreduce:
    every rank's gradients flattened into one buffer, summed, divided by the world size and
    copied back. A parameter without a gradient counts as zeros (and gets them), so ranks
    whose batches did not reach every parameter stay in step."""
    import torch
    group = _current("average_gradients")
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        if p.dtype != torch.float32:
            raise UsageError(f"average_gradients: a parameter of shape {tuple(p.shape)} is {p.dtype}; "
                             f"only torch.float32 is averaged")
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if not params:
        return
    if group.world_size == 1:
        return
    flat = torch.cat([p.grad.detach().reshape(-1) for p in params])
    group.allreduce_sum(flat.numpy())
    flat.div_(group.world_size)
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.grad.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n

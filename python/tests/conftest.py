"""Fixtures of the Python package's tests: the runtime, Cora partitioned into 1 and 2 parts,
and Cora read independently of Partita's reader (the reference for features, labels, edges).

Run by ctest (Python.test_*, a test per file) with the built package and PyTorch Geometric
on PYTHONPATH and the datasets at PARTITA_DATA_DIR; a missing one fails the run with what
to set.
"""

import os

import numpy as np
import pytest

try:
    import torch_geometric  # noqa: F401
except ImportError as e:  # not a skip: these tests are what PyG users rely on
    raise ImportError(f"PyTorch Geometric is not importable ({e}): put PyTorch Geometric 2.5.3's source folder "
                      f"on PYTHONPATH (ctest does, from the CMake cache entry PARTITA_PYG_DIR)") from e

import partita


def data_dir():
    folder = os.environ.get("PARTITA_DATA_DIR", "")
    if not os.path.isfile(os.path.join(folder, "cora", "cora.content")):
        pytest.fail(f"PARTITA_DATA_DIR={folder!r} does not hold cora/cora.content: set it to the datasets' folder "
                    f"(ctest sets it from the CMake option PARTITA_DATA_DIR)")
    return folder


def assert_arrays_equal(got, want, err_msg=""):
    """np.testing.assert_array_equal, with np.array_equal's comparison first: the assertion's
    NaN and shape handling took twenty times the comparison on a batch's features, and the
    tests compare thousands of arrays. A difference is explained by the assertion."""
    if not np.array_equal(got, want):
        np.testing.assert_array_equal(got, want, err_msg=err_msg)


@pytest.fixture(scope="session", autouse=True)
def runtime():
    # One torch thread: the sampler actors share the process's 2 cores, and libtorch's
    # spinning OpenMP workers, competing with them and with ctest's other tests, made a
    # model step up to 30 times slower on a loaded machine.
    import torch
    torch.set_num_threads(1)
    partita.init(threads=2)
    yield
    partita.shutdown()


@pytest.fixture(scope="session")
def cora_path():
    return os.path.join(data_dir(), "cora")


@pytest.fixture(scope="session")
def cora_parts(tmp_path_factory, cora_path):
    """Cora (LINQS reader, its seeded 140/500/1000 split) in 1 and in 2 METIS parts."""
    root = tmp_path_factory.mktemp("cora")
    return {k: partita.partition(cora_path, root / f"parts{k}", num_parts=k, format="linqs") for k in (1, 2)}


class Cora:
    """Cora as read here from its text files: node v is the v-th line of cora.content, classes
    are numbered in sorted order of their names, citations made undirected without self-loops
    or duplicates, edges ordered by (destination, source): what partitioner/readers.h promises."""

    def __init__(self, folder):
        ids, rows, labels = [], [], []
        with open(os.path.join(folder, "cora.content")) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                ids.append(fields[0])
                rows.append([float(v) for v in fields[1:-1]])
                labels.append(fields[-1])
        self.x = np.array(rows, dtype=np.float32)
        classes = sorted(set(labels))
        self.y = np.array([classes.index(label) for label in labels], dtype=np.int64)
        index = {paper: v for v, paper in enumerate(ids)}
        pairs = set()
        with open(os.path.join(folder, "cora.cites")) as f:
            for line in f:
                a, b = line.split()
                if a in index and b in index and a != b:
                    u, v = index[a], index[b]
                    pairs.add((u, v))
                    pairs.add((v, u))
        edges = sorted(pairs, key=lambda e: (e[1], e[0]))
        self.edge_index = np.array(edges, dtype=np.int64).T  # [2, E]: source, destination
        self.num_nodes = len(ids)


@pytest.fixture(scope="session")
def cora(cora_path):
    return Cora(cora_path)

"""A model trained by `partita run` leaves Partita: `partita export` loads into PyTorch
Geometric's module with load_state_dict(strict=True), and PyG's full-graph forward predicts
what `partita predict` wrote (same class on every node, logits and embeddings close).
The same on Cora (PARTITA_DATA_DIR). A knowledge-graph run's tables load into PyG's DistMult
and match predict's .npy files.

Usage: pyg_export_test.py PARTITA_BINARY (PyG 2.5.3 on PYTHONPATH, the datasets in
PARTITA_DATA_DIR; Debian's python3-torch).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import kge, models

PARTITA = None  # set from argv
# A graph a 2-layer model learns in 3 epochs (SBM: classes are blocks with class features).
NODES, CLASSES, FEATURES, HIDDEN = 600, 4, 16, 16


def partita(*args, expect=0):
    r = subprocess.run([PARTITA, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != expect:
        raise AssertionError(f"partita {' '.join(args)}: exit {r.returncode}, expected {expect}\n{r.stderr}")
    return r


class ExportedNodeModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.graph = os.path.join(cls.dir, "graph")
        partita("generate", "sbm", "--nodes", str(NODES), "--classes", str(CLASSES), "--avg-degree", "6",
                "--features", str(FEATURES), "--train-fraction", "0.5", "--seed", "3", "-o", cls.graph)
        cls.x = torch.from_numpy(np.load(os.path.join(cls.graph, "x.npy")))
        cls.edge_index = torch.from_numpy(np.load(os.path.join(cls.graph, "edge_index.npy"))).long()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def train(self, kind):
        run = os.path.join(self.dir, "run-" + kind)
        job = os.path.join(self.dir, kind + ".yaml")
        with open(job, "w") as f:
            f.write(f"data: {{dataset: graph, format: npy, num_partitions: 2}}\n"
                    f"model: {{kind: {kind}, hidden: {HIDDEN}, layers: 2, heads: 2}}\n"
                    f"sampling: {{fanouts: [5, 5], batch_size: 64}}\n"
                    f"train: {{epochs: 3, learning_rate: 0.03}}\n"
                    f"output: {run}\n")
        partita("run", job)
        partita("export", run)
        partita("predict", run)
        return run

    def check_kind(self, kind, pyg_class, kwargs):
        run = self.train(kind)
        with open(os.path.join(run, "model.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["pyg_class"], pyg_class.__name__)
        self.assertEqual((meta["in_channels"], meta["hidden_channels"], meta["num_layers"], meta["out_channels"]),
                         (FEATURES, HIDDEN, 2, CLASSES))
        self.assertEqual(meta["kwargs"], kwargs)
        state = torch.load(os.path.join(run, "model.pt"))
        self.assertIsInstance(state, dict)
        model = pyg_class(meta["in_channels"], meta["hidden_channels"], meta["num_layers"], meta["out_channels"],
                          **meta["kwargs"])
        model.load_state_dict(state, strict=True)
        model.eval()
        with torch.no_grad():
            logits = model(self.x, self.edge_index)
            hidden = F.relu(model.convs[0](self.x, self.edge_index))  # what the last layer reads

        out = os.path.join(run, "predictions")
        np.testing.assert_array_equal(np.load(os.path.join(out, "nodes.npy")), np.arange(NODES))
        ours = np.load(os.path.join(out, "logits.npy"))
        self.assertEqual(ours.shape, (NODES, CLASSES))
        self.assertEqual(ours.dtype, np.float32)
        np.testing.assert_allclose(ours, logits.numpy(), rtol=1e-4, atol=1e-4)
        predictions = np.load(os.path.join(out, "predictions.npy"))
        self.assertEqual(predictions.dtype, np.int64)
        np.testing.assert_array_equal(predictions, logits.argmax(1).numpy())
        np.testing.assert_allclose(np.load(os.path.join(out, "embeddings.npy")), hidden.numpy(), rtol=1e-4, atol=1e-4)
        # Trained, not random: the model beats chance (0.25) on the graph's labels.
        y = np.load(os.path.join(self.graph, "y.npy"))
        self.assertGreater((predictions == y).mean(), 0.5)

        # A subset in a given order: the same rows, the same values (deterministic).
        nodes = np.array([17, 0, NODES - 1, 17], dtype=np.int32)
        np.save(os.path.join(self.dir, "nodes.npy"), nodes)
        subset = os.path.join(self.dir, "subset-" + kind)
        partita("predict", run, "--nodes", os.path.join(self.dir, "nodes.npy"), "--output", subset)
        np.testing.assert_array_equal(np.load(os.path.join(subset, "nodes.npy")), nodes.astype(np.int64))
        np.testing.assert_array_equal(np.load(os.path.join(subset, "logits.npy")), ours[nodes])
        np.testing.assert_array_equal(np.load(os.path.join(subset, "predictions.npy")), predictions[nodes])

    def test_graphsage(self):
        self.check_kind("graphsage", models.GraphSAGE, {"aggr": "mean"})

    def test_gcn(self):
        self.check_kind("gcn", models.GCN, {})

    def test_gat(self):
        self.check_kind("gat", models.GAT, {"heads": 2})


class ExportedCora(unittest.TestCase):
    """Cora (LINQS) from PARTITA_DATA_DIR, read here as the reader numbers it: papers in the
    order of cora.content, classes in sorted order of their names, each citation an edge in
    both directions, self-citations dropped, repeats merged."""

    def test_graphsage_on_cora(self):
        cora = os.path.join(os.environ["PARTITA_DATA_DIR"], "cora")
        ids, features, names = [], [], []
        with open(os.path.join(cora, "cora.content")) as f:
            for line in f:
                fields = line.split()
                ids.append(fields[0])
                features.append([float(v) for v in fields[1:-1]])
                names.append(fields[-1])
        index = {paper: i for i, paper in enumerate(ids)}
        classes = sorted(set(names))
        y = np.array([classes.index(n) for n in names])
        edges = set()
        with open(os.path.join(cora, "cora.cites")) as f:
            for line in f:
                a, b = line.split()
                if a in index and b in index and a != b:
                    edges |= {(index[a], index[b]), (index[b], index[a])}
        edge_index = torch.tensor(sorted(edges), dtype=torch.long).t()
        x = torch.tensor(features, dtype=torch.float32)

        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "job.yaml"), "w") as f:
                f.write(f"data: {{dataset: {cora}, format: linqs, num_partitions: 2}}\n"
                        "model: {kind: graphsage, hidden: 32, layers: 2}\n"
                        "sampling: {fanouts: [10, 10], batch_size: 32}\n"
                        "train: {epochs: 5, learning_rate: 0.01}\n"
                        "output: run\n")
            run = os.path.join(tmp, "run")
            partita("run", os.path.join(tmp, "job.yaml"))
            partita("export", run)
            partita("predict", run)
            with open(os.path.join(run, "model.json")) as f:
                meta = json.load(f)
            self.assertEqual((meta["in_channels"], meta["out_channels"]), (x.shape[1], len(classes)))
            model = models.GraphSAGE(meta["in_channels"], meta["hidden_channels"], meta["num_layers"],
                                     meta["out_channels"], **meta["kwargs"])
            model.load_state_dict(torch.load(os.path.join(run, "model.pt")), strict=True)
            model.eval()
            with torch.no_grad():
                logits = model(x, edge_index)
            ours = np.load(os.path.join(run, "predictions", "logits.npy"))
            np.testing.assert_allclose(ours, logits.numpy(), rtol=1e-4, atol=1e-4)
            predictions = np.load(os.path.join(run, "predictions", "predictions.npy"))
            np.testing.assert_array_equal(predictions, logits.argmax(1).numpy())
            # Trained: well above the largest class's share (about 0.3).
            self.assertGreater((predictions == y).mean(), 0.6)


class ExportedKnowledgeGraph(unittest.TestCase):
    def test_distmult_tables_load_into_pyg(self):
        with tempfile.TemporaryDirectory() as tmp:
            rng = np.random.default_rng(5)
            entities, relations = 50, 3
            triples = {(int(h), int(r), int(t)) for h, r, t in
                       zip(rng.integers(0, entities, 400), rng.integers(0, relations, 400), rng.integers(0, entities, 400))
                       if h != t}
            triples = sorted(triples)
            os.makedirs(os.path.join(tmp, "kg"))
            for name, part in (("train.txt", triples), ("valid.txt", triples[:10]), ("test.txt", triples[10:20])):
                with open(os.path.join(tmp, "kg", name), "w") as f:
                    f.writelines(f"e{h}\tr{r}\te{t}\n" for h, r, t in part)
            with open(os.path.join(tmp, "job.yaml"), "w") as f:
                f.write("task: link_prediction\n"
                        "data: {dataset: kg, format: triples, num_partitions: 2}\n"
                        "model: {decoder: distmult, dim: 8}\n"
                        "negatives: {k: 16, chunk_size: 16}\n"
                        "sampling: {batch_size: 64}\n"
                        "train: {epochs: 2}\n"
                        "output: run\n")
            run = os.path.join(tmp, "run")
            partita("run", os.path.join(tmp, "job.yaml"))
            partita("export", run, "--output", os.path.join(tmp, "kg-model.pt"))
            partita("predict", run)
            with open(os.path.join(tmp, "kg-model.json")) as f:
                meta = json.load(f)
            seen = len({h for h, _, t in triples} | {t for _, _, t in triples})
            self.assertEqual((meta["pyg_class"], meta["num_nodes"], meta["num_relations"], meta["hidden_channels"]),
                             ("DistMult", seen, relations, 8))
            model = kge.DistMult(meta["num_nodes"], meta["num_relations"], meta["hidden_channels"])
            model.load_state_dict(torch.load(os.path.join(tmp, "kg-model.pt")), strict=True)
            ent = np.load(os.path.join(run, "predictions", "entities.npy"))
            rel = np.load(os.path.join(run, "predictions", "relations.npy"))
            self.assertEqual(ent.shape, (seen, 8))
            self.assertEqual(rel.shape, (relations, 8))
            np.testing.assert_array_equal(ent, model.node_emb.weight.detach().numpy())
            np.testing.assert_array_equal(rel, model.rel_emb.weight.detach().numpy())


if __name__ == "__main__":
    PARTITA = sys.argv[1]
    unittest.main(argv=[sys.argv[0], "-v"])

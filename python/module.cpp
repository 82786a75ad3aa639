// partita._partita: the Python bindings of the embedded runtime, partition folders, the
// partitioner, the node loader and the process groups of data-parallel training. The
// Python layer (partita/__init__.py, partita/pyg.py, partita/distributed.py) is the API;
// this module is its native half.
//
// Torch-free on purpose: a batch reaches Python as numpy arrays whose memory is the
// sampler's own std::vectors, kept alive by a capsule as each array's base (no copy), and
// partita/pyg.py makes torch tensors of them with torch.from_numpy (no copy either). So no
// unit here includes <torch/torch.h> (tens of seconds of compile time each), and the
// module does not depend on how the Python torch was built. A batch's feature buffer goes
// back to the sampler's pool when the last tensor over it dies (graph/buffer_pool.h).
//
// Waiting (for a batch, the actors' set-up, partitioning, opening a folder) happens with
// Python's lock released. Errors become Python exceptions naming the problem: partita.Error
// (a RuntimeError), partita.UsageError (also a ValueError: bad arguments, ids outside the
// graph), partita.RuntimeClosedError (a partita.Error: the runtime is not running).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.h"
#include "partitioner/partition_report.h"
#include "python/embedded_runtime.h"
#include "python/graph_handle.h"
#include "python/link_loader.h"
#include "python/node_loader.h"
#include "python/partition_request.h"
#include "python/process_group.h"
#include "python/store_bindings.h"

namespace py = pybind11;
using partita::Error;
using partita::UsageError;
using namespace partita::python;

namespace {

// `values` as a numpy array of `shape` over its own memory: the vector moves into a capsule
// that numpy keeps as the array's base and frees with it.
template <class T>
py::array adopt(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::move(shape), owned->data(), base);
}

// A batch's features: the buffer goes back to the sampler's pool instead of being freed.
struct RecycledRows {
  std::vector<float> x;
  std::function<void(std::vector<float>&&)> give_back;
  ~RecycledRows() {
    if (give_back) give_back(std::move(x));
  }
};

py::array adopt_rows(std::vector<float>&& x, std::function<void(std::vector<float>&&)> give_back,
                     std::vector<py::ssize_t> shape) {
  auto* owned = new RecycledRows{std::move(x), std::move(give_back)};
  py::capsule base(owned, [](void* p) { delete static_cast<RecycledRows*>(p); });
  return py::array_t<float>(std::move(shape), owned->x.data(), base);
}

py::dict to_python(LoadedBatch&& b) {
  const auto nodes = static_cast<py::ssize_t>(b.n_id.size());
  const auto edges = static_cast<py::ssize_t>(b.edge_index.size() / 2);
  py::dict d;
  d["n_id"] = adopt(std::move(b.n_id), {nodes});
  d["edge_index"] = adopt(std::move(b.edge_index), {2, edges});
  d["e_id"] = adopt(std::move(b.e_id), {edges});
  d["input_id"] = adopt(std::move(b.input_id), {static_cast<py::ssize_t>(b.input_id.size())});
  d["num_sampled_nodes"] = py::cast(b.num_sampled_nodes);
  d["num_sampled_edges"] = py::cast(b.num_sampled_edges);
  d["batch_size"] = b.batch_size;
  d["batch"] = b.batch.empty() ? py::object(py::none())
                               : py::object(adopt(std::move(b.batch), {static_cast<py::ssize_t>(b.batch.size())}));
  if (b.x.empty() && b.feature_dim == 0) {
    d["x"] = py::none();
  } else if (b.x.size() != static_cast<size_t>(nodes) * static_cast<size_t>(b.feature_dim)) {
    // numpy would read past the rows: a batch whose features do not match its nodes.
    throw Error("a batch of " + std::to_string(nodes) + " nodes came with " + std::to_string(b.x.size()) +
                " feature values, not " + std::to_string(nodes) + " x " + std::to_string(b.feature_dim));
  } else {
    d["x"] = adopt_rows(std::move(b.x), std::move(b.recycle), {nodes, static_cast<py::ssize_t>(b.feature_dim)});
  }
  d["y"] = b.y.empty() ? py::object(py::none()) : py::object(adopt(std::move(b.y), {nodes}));
  const bool hetero = !b.node_type.empty();
  d["node_type"] = hetero ? py::object(adopt(std::move(b.node_type), {nodes})) : py::object(py::none());
  d["edge_type"] = hetero ? py::object(adopt(std::move(b.edge_type), {edges})) : py::object(py::none());
  return d;
}

py::dict to_python(LoadedLinkBatch&& b) {
  py::dict d = to_python(std::move(b.batch));
  const auto pairs = static_cast<py::ssize_t>(b.src_index.size());
  d["num_positives"] = b.num_positives;
  d["src_index"] = adopt(std::move(b.src_index), {pairs});
  d["dst_index"] = adopt(std::move(b.dst_index), {pairs});
  const auto per_positive = static_cast<py::ssize_t>(b.dst_neg_index.size()) / std::max<py::ssize_t>(pairs, 1);
  d["dst_neg_index"] = b.dst_neg_index.empty()
                           ? py::object(py::none())
                           : py::object(adopt(std::move(b.dst_neg_index), {pairs, per_positive}));
  d["seed_time"] = b.seed_time.empty() ? py::object(py::none()) : py::object(adopt(std::move(b.seed_time), {pairs}));
  return d;
}

std::vector<int64_t> id_vector(const py::array_t<int64_t, py::array::c_style>& a, const std::string& what) {
  if (a.ndim() != 1) {
    throw UsageError(what + " must be one-dimensional, not of " + std::to_string(a.ndim()) + " dimensions");
  }
  return std::vector<int64_t>(a.data(), a.data() + a.size());
}

NegativeMode negative_mode(const std::string& mode) {
  if (mode == "none") return NegativeMode::kNone;
  if (mode == "binary") return NegativeMode::kBinary;
  if (mode == "triplet") return NegativeMode::kTriplet;
  throw UsageError("LinkNeighborLoader: neg_sampling mode '" + mode + "' is not one of: binary, triplet");
}

// A read-only numpy view of values[begin, end), which `owner` keeps alive.
template <class T>
py::array view_of(const std::vector<T>& values, py::object owner, size_t begin = 0, size_t end = SIZE_MAX) {
  end = std::min(end, values.size());
  py::array_t<T> a({static_cast<py::ssize_t>(end - begin)}, values.data() + begin, owner);
  a.attr("flags").attr("writeable") = false;
  return a;
}

std::chrono::milliseconds checked_timeout(double seconds) {
  if (!(seconds > 0) || seconds > 3600) {
    std::ostringstream text;
    text << "timeout " << seconds << " s (must be more than 0 and at most 3600)";
    throw UsageError(text.str());
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

SessionOptions session_options(const std::vector<int>& num_neighbors, bool replace, bool disjoint, int prefetch,
                               double timeout, const std::string& features) {
  SessionOptions o;
  o.fanouts = num_neighbors;
  o.replace = replace;
  o.disjoint = disjoint;
  o.prefetch = prefetch;
  o.deadline = checked_timeout(timeout);
  o.features = features;
  return o;
}

PyObject* g_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_closed_error = nullptr;

// partita.Error and its subclasses, and the translation of the runtime's exceptions to them.
void bind_errors(py::module_& m) {
  g_error = PyErr_NewException("partita.Error", PyExc_RuntimeError, nullptr);
  py::tuple usage_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
  g_usage_error = PyErr_NewException("partita.UsageError", usage_bases.ptr(), nullptr);
  g_closed_error = PyErr_NewException("partita.RuntimeClosedError", g_error, nullptr);
  m.attr("Error") = py::handle(g_error);
  m.attr("UsageError") = py::handle(g_usage_error);
  m.attr("RuntimeClosedError") = py::handle(g_closed_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const RuntimeClosed& e) {
      PyErr_SetString(g_closed_error, e.what());
    } catch (const UsageError& e) {
      PyErr_SetString(g_usage_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

// The embedded runtime's life: init, shutdown, is_running, nodes.
void bind_runtime(py::module_& m) {
  m.def(
      "init",
      [](int threads, const std::string& log_level, const std::string& address, const std::string& tls_dir,
         double timeout) {
        const spdlog::level::level_enum level = spdlog::level::from_str(log_level);
        if (level == spdlog::level::off && log_level != "off") {
          throw UsageError("log_level '" + log_level + "' is not one of: trace, debug, info, warning, error, off");
        }
        spdlog::set_level(level);
        RuntimeOptions options;
        options.threads = threads;
        options.address = address;
        options.tls_dir = tls_dir;
        options.timeout = checked_timeout(timeout);
        py::gil_scoped_release release;
        EmbeddedRuntime::instance().start(options);
      },
      py::arg("threads") = 0, py::arg("log_level") = "warning", py::arg("address") = "", py::arg("tls_dir") = "",
      py::arg("timeout") = 10.0,
      "Starts the runtime: every actor in this process (as `partita run`), or on the live nodes of the cluster "
      "whose head is at `address`, over mutual TLS.");
  m.def(
      "shutdown",
      [] {
        py::gil_scoped_release release;
        EmbeddedRuntime::instance().stop();
      },
      "Stops the runtime: every loader is closed, then its actors and the actor system.");
  m.def("is_running", [] { return EmbeddedRuntime::instance().running(); });
  m.def("nodes", [] { return EmbeddedRuntime::instance().nodes(); },
        "Where the loaders' actors run: [\"in-process\"], or the cluster nodes' addresses.");
}

// partition(): a dataset to a partition folder.
void bind_partitioner(py::module_& m) {
  m.def(
      "partition",
      [](const std::string& input, const std::string& format, const std::string& output, int num_parts,
         const std::string& method, uint64_t seed, uint64_t split_seed, bool overwrite, bool balance_train,
         const std::vector<std::string>& transforms, int threads, double holdout_val, double holdout_test,
         bool holdout_by_time, bool holdout_keep_history, const std::vector<std::string>& holdout_edge_type) {
        PartitionRequest r;
        r.input = input;
        r.format = format;
        r.output = output;
        r.num_parts = num_parts;
        r.method = method;
        r.seed = seed;
        r.split_seed = split_seed;
        r.overwrite = overwrite;
        r.balance_train = balance_train;
        r.transforms = transforms;
        r.threads = threads;
        r.holdout_val = holdout_val;
        r.holdout_test = holdout_test;
        r.holdout_by_time = holdout_by_time;
        r.holdout_keep_history = holdout_keep_history;
        r.holdout_edge_type = holdout_edge_type;
        py::gil_scoped_release release;
        return partita::format_report_json(partition_to_folder(r));
      },
      py::arg("input"), py::arg("format"), py::arg("output"), py::arg("num_parts"), py::arg("method"),
      py::arg("seed"), py::arg("split_seed"), py::arg("overwrite"), py::arg("balance_train"),
      py::arg("transforms"), py::arg("threads"), py::arg("holdout_val") = 0.0, py::arg("holdout_test") = 0.0,
      py::arg("holdout_by_time") = false, py::arg("holdout_keep_history") = false,
      py::arg("holdout_edge_type") = std::vector<std::string>{},
      "Reads a dataset, partitions it and writes the partition folder; returns the report as JSON.");
}

using GraphClass = py::class_<GraphHandle, std::shared_ptr<GraphHandle>>;

// A Graph's folder, its whole-graph properties and its id maps.
void def_graph_properties(GraphClass& graph) {
  graph
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release release;
             return std::make_shared<GraphHandle>(path);
           }),
           py::arg("path"))
      .def_property_readonly("path", &GraphHandle::dir)
      .def_property_readonly("num_nodes", [](const GraphHandle& g) { return g.meta().num_nodes; })
      .def_property_readonly("num_edges", [](const GraphHandle& g) { return g.meta().num_edges; })
      .def_property_readonly("num_parts", [](const GraphHandle& g) { return g.meta().num_parts; })
      .def_property_readonly("feature_dim", [](const GraphHandle& g) { return g.meta().feature_dim; })
      .def_property_readonly("num_classes", [](const GraphHandle& g) { return g.meta().num_classes; })
      .def_property_readonly("has_labels", [](const GraphHandle& g) { return g.meta().has_labels; })
      .def_property_readonly("is_hetero", [](const GraphHandle& g) { return g.meta().is_hetero; })
      .def_property_readonly(
          "node_types", [](const GraphHandle& g) { return g.meta().node_types; },
          "A heterogeneous graph's node type names, by the index a batch's node_type holds.")
      .def_property_readonly(
          "edge_types",
          [](const GraphHandle& g) {
            std::vector<std::tuple<std::string, std::string, std::string>> types;
            for (const partita::EdgeType& t : g.meta().edge_types) types.emplace_back(t.src_type, t.relation, t.dst_type);
            return types;
          },
          "A heterogeneous graph's edge types (source type, relation, destination type), by the index a batch's "
          "edge_type holds.")
      .def_property_readonly(
          "partition_book", [](const GraphHandle& g) { return g.book().offsets(); },
          "Part p owns the global ids [partition_book[p], partition_book[p + 1]).")
      .def("__repr__",
           [](const GraphHandle& g) {
             return "partita.Graph('" + g.dir() + "', " + std::to_string(g.meta().num_nodes) + " nodes, " +
                    std::to_string(g.meta().num_parts) + " parts)";
           })
      .def(
          "split", [](py::object self, const std::string& name) {
            return view_of(self.cast<const GraphHandle&>().split(name), self);
          },
          py::arg("name"), "The split's nodes (\"train\", \"val\", \"test\") in original ids, sorted (read-only).")
      .def(
          "global_ids", [](py::object self) { return view_of(self.cast<const GraphHandle&>().global_of(), self); },
          "Original id -> global id (the partitioner's numbering; each part a contiguous range), read-only.");
}

// A heterogeneous graph by type (python/graph_handle.h), what partita.pyg's HeteroData
// batches and stores are made of: views of the handle's arrays, no copies.
void def_graph_type_views(GraphClass& graph) {
  graph
      .def_property_readonly(
          "num_nodes_by_type",
          [](const GraphHandle& g) {
            std::vector<int64_t> counts;
            const std::vector<int64_t>& offsets = g.type_node_offsets();
            for (size_t t = 0; t + 1 < offsets.size(); ++t) counts.push_back(offsets[t + 1] - offsets[t]);
            return counts;
          },
          "A heterogeneous graph's node count of each type, by node type index ([] for a homogeneous one).")
      .def_property_readonly(
          "num_edges_by_type", [](const GraphHandle& g) { return g.type_num_edges(); },
          "A heterogeneous graph's edge count of each type, by edge type index ([] for a homogeneous one).")
      .def_property_readonly(
          "labelled_node_types",
          [](const GraphHandle& g) {
            std::vector<std::string> names;
            for (int32_t t : g.labelled_node_types()) names.push_back(g.meta().node_types[static_cast<size_t>(t)]);
            return names;
          },
          "The node types of which some node has a label.")
      .def_property_readonly(
          "feature_dims_by_type",
          [](const GraphHandle& g) {
            const auto& m = g.meta();
            return m.node_type_feature_dim.empty() ? std::vector<int64_t>(m.node_types.size(), m.feature_dim)
                                                   : m.node_type_feature_dim;
          },
          "A heterogeneous graph's feature width of each node type: the leading columns of x its nodes use "
          "(the rest zero), by node type index ([] for a homogeneous one).")
      .def(
          "_node_types", [](py::object self) { return view_of(self.cast<const GraphHandle&>().original_node_type(), self); },
          "Original id -> node type index, read-only (empty for a homogeneous graph).")
      .def(
          "_node_index_in_type",
          [](py::object self) { return view_of(self.cast<const GraphHandle&>().node_index_in_type(), self); },
          "Original id -> the node's row among its type's nodes (HeteroData[type]), read-only.")
      .def(
          "_nodes_of_type",
          [](py::object self, int32_t type) {
            const GraphHandle& g = self.cast<const GraphHandle&>();
            const std::vector<int64_t>& offsets = g.type_node_offsets();
            if (type < 0 || static_cast<size_t>(type) + 1 >= offsets.size()) {
              throw UsageError("node type " + std::to_string(type) + " is not one of the graph's " +
                               std::to_string(offsets.empty() ? 0 : offsets.size() - 1) + " node types");
            }
            return view_of(g.nodes_by_type(), self, static_cast<size_t>(offsets[static_cast<size_t>(type)]),
                           static_cast<size_t>(offsets[static_cast<size_t>(type) + 1]));
          },
          py::arg("type"), "Row -> original id of node type `type`'s nodes, read-only.")
      .def(
          "_edge_types", [](py::object self) { return view_of(self.cast<const GraphHandle&>().original_edge_type(), self); },
          "Original edge id -> edge type index, read-only (empty for a homogeneous graph).")
      .def(
          "_edge_index_in_type",
          [](py::object self) { return view_of(self.cast<const GraphHandle&>().edge_index_in_type(), self); },
          "Original edge id -> the edge's row among its type's edges, read-only.");
}

// Graph: an open partition folder.
void bind_graph(py::module_& m) {
  GraphClass graph(m, "Graph");
  def_graph_properties(graph);
  def_graph_type_views(graph);
}

// NodeLoader: seed nodes to sampled batches.
void bind_node_loader(py::module_& m) {
  py::class_<NodeLoader>(m, "NodeLoader")
      .def(py::init([](std::shared_ptr<GraphHandle> graph, py::array_t<int64_t, py::array::c_style> input_nodes,
                       const std::vector<int>& num_neighbors, int64_t batch_size, bool shuffle, bool drop_last,
                       uint64_t seed, bool replace, bool disjoint, int prefetch, double timeout,
                       const std::string& features) {
             if (!graph) throw UsageError("NeighborLoader: graph is None");
             if (input_nodes.ndim() != 1) {
               throw UsageError("NeighborLoader: input_nodes must be one-dimensional, not of " +
                                std::to_string(input_nodes.ndim()) + " dimensions");
             }
             std::vector<int64_t> inputs(input_nodes.data(), input_nodes.data() + input_nodes.size());
             LoaderOptions options;
             options.session = session_options(num_neighbors, replace, disjoint, prefetch, timeout, features);
             options.batch_size = batch_size;
             options.shuffle = shuffle;
             options.drop_last = drop_last;
             options.seed = seed;
             py::gil_scoped_release release;
             return std::make_unique<NodeLoader>(std::move(graph), std::move(inputs), options);
           }),
           py::arg("graph"), py::arg("input_nodes"), py::arg("num_neighbors"), py::arg("batch_size"),
           py::arg("shuffle"), py::arg("drop_last"), py::arg("seed"), py::arg("replace"), py::arg("disjoint"),
           py::arg("prefetch"), py::arg("timeout"), py::arg("features"))
      .def("__len__", &NodeLoader::num_batches)
      .def_property_readonly("num_inputs", &NodeLoader::num_inputs)
      .def("start_epoch", &NodeLoader::start_epoch, py::arg("epoch"), py::call_guard<py::gil_scoped_release>())
      .def("next",
           [](NodeLoader& loader) {
             LoadedBatch batch;
             {
               py::gil_scoped_release release;
               batch = loader.next();
             }
             return to_python(std::move(batch));
           })
      .def("close", &NodeLoader::close, py::call_guard<py::gil_scoped_release>());
}

// _edge_split() and LinkLoader: a folder's link splits, and seed edges to sampled batches.
void bind_link_loader(py::module_& m) {
  m.def(
      "_edge_split",
      [](std::shared_ptr<GraphHandle> graph, const std::string& split, int32_t edge_type) {
        if (!graph) throw UsageError("edge split: graph is None");
        EdgeList edges;
        {
          py::gil_scoped_release release;
          edges = read_edge_split(*graph, split, edge_type);
        }
        const auto n = static_cast<py::ssize_t>(edges.src.size());
        std::vector<int64_t> index(std::move(edges.src));
        index.insert(index.end(), edges.dst.begin(), edges.dst.end());
        py::dict d;
        d["edge_index"] = adopt(std::move(index), {2, n});
        d["time"] = edges.time.empty() ? py::object(py::none()) : py::object(adopt(std::move(edges.time), {n}));
        return d;
      },
      py::arg("graph"), py::arg("split"), py::arg("edge_type") = -1,
      "A folder's link split (train, val, test) as {edge_index: [2, k] original ids, time: [k] or None}; "
      "edge_type >= 0 (an index into graph.edge_types) keeps that type's edges alone.");

  py::class_<LinkLoader>(m, "LinkLoader")
      .def(py::init([](std::shared_ptr<GraphHandle> graph, py::array_t<int64_t, py::array::c_style> src,
                       py::array_t<int64_t, py::array::c_style> dst, std::optional<py::array_t<int64_t, py::array::c_style>> time,
                       const std::vector<int>& num_neighbors, int64_t batch_size, bool shuffle, bool drop_last,
                       uint64_t seed, bool replace, bool disjoint, int prefetch, double timeout,
                       const std::string& features, const std::string& neg_sampling, double amount,
                       const std::string& temporal_strategy, int32_t edge_type) {
             if (!graph) throw UsageError("LinkNeighborLoader: graph is None");
             EdgeList edges;
             edges.src = id_vector(src, "LinkNeighborLoader: edge_label_index[0]");
             edges.dst = id_vector(dst, "LinkNeighborLoader: edge_label_index[1]");
             if (time) edges.time = id_vector(*time, "LinkNeighborLoader: edge_label_time");
             LinkLoaderOptions options;
             options.session = session_options(num_neighbors, replace, disjoint, prefetch, timeout, features);
             if (time) {
               options.session.temporal = "edge";
               options.session.temporal_strategy = temporal_strategy;
             }
             options.batch_size = batch_size;
             options.shuffle = shuffle;
             options.drop_last = drop_last;
             options.seed = seed;
             options.negatives = negative_mode(neg_sampling);
             options.amount = amount;
             options.edge_type = edge_type;
             py::gil_scoped_release release;
             return std::make_unique<LinkLoader>(std::move(graph), std::move(edges), options);
           }),
           py::arg("graph"), py::arg("src"), py::arg("dst"), py::arg("time"), py::arg("num_neighbors"),
           py::arg("batch_size"), py::arg("shuffle"), py::arg("drop_last"), py::arg("seed"), py::arg("replace"),
           py::arg("disjoint"), py::arg("prefetch"), py::arg("timeout"), py::arg("features"),
           py::arg("neg_sampling"), py::arg("amount"), py::arg("temporal_strategy"), py::arg("edge_type") = -1)
      .def("__len__", &LinkLoader::num_batches)
      .def_property_readonly("num_edges", &LinkLoader::num_edges)
      .def("start_epoch", &LinkLoader::start_epoch, py::arg("epoch"), py::call_guard<py::gil_scoped_release>())
      .def("next",
           [](LinkLoader& loader) {
             LoadedLinkBatch batch;
             {
               py::gil_scoped_release release;
               batch = loader.next();
             }
             return to_python(std::move(batch));
           })
      .def("close", &LinkLoader::close, py::call_guard<py::gil_scoped_release>());
}

// _split_epoch(): a trainer's batches of an epoch, the reference for the loaders.
void bind_split_epoch(py::module_& m) {
  m.def(
      "_split_epoch",
      [](std::shared_ptr<GraphHandle> graph, int part, const std::string& split, const std::vector<int>& num_neighbors,
         int64_t batch_size, uint64_t seed, uint64_t epoch, bool shuffle) {
        if (!graph) throw UsageError("_split_epoch: graph is None");
        std::vector<LoadedBatch> batches;
        {
          py::gil_scoped_release release;
          SamplerSession session(*graph, part, session_options(num_neighbors, false, false, 2, 60, "auto"),
                                 "trainer's sampler");
          const int64_t count = session.start_split_epoch(split, seed, epoch, batch_size, shuffle);
          for (int64_t b = 0; b < count; ++b) {
            partita::SampleKey key;
            batches.push_back(loaded_batch(session.next(key), *graph, session.recycler()));
          }
        }
        py::list out;
        for (LoadedBatch& b : batches) out.append(to_python(std::move(b)));
        return out;
      },
      py::arg("graph"), py::arg("part"), py::arg("split"), py::arg("num_neighbors"), py::arg("batch_size"),
      py::arg("seed"), py::arg("epoch"), py::arg("shuffle"),
      "The batches a trainer of partition `part` takes in an epoch of `split` (protocol.h: epoch), sampled by "
      "the same actors as a job's: the reference the loader is compared with.");
}

// partita.distributed's native half: a rank's allreduce group. Every wait (the rendezvous,
// the ring's wiring, each sum) has its deadline and runs with Python's lock released.
void bind_process_group(py::module_& m) {
  py::class_<ProcessGroup>(m, "ProcessGroup")
      .def(py::init([](const std::string& group, int rank, int world_size, double timeout, double op_timeout) {
             ProcessGroupOptions o;
             o.group = group;
             o.rank = rank;
             o.size = world_size;
             o.timeout = checked_timeout(timeout);
             o.op_timeout = checked_timeout(op_timeout);
             py::gil_scoped_release release;
             return std::make_unique<ProcessGroup>(o);
           }),
           py::arg("group"), py::arg("rank"), py::arg("world_size"), py::arg("timeout"), py::arg("op_timeout"))
      .def_property_readonly("rank", &ProcessGroup::rank)
      .def_property_readonly("world_size", &ProcessGroup::size)
      .def_property_readonly("group", &ProcessGroup::group)
      .def_property_readonly("host", &ProcessGroup::host)
      .def_property_readonly("destroyed", &ProcessGroup::destroyed)
      .def(
          "allreduce_sum",
          [](ProcessGroup& g, py::array a) {
            if (!a.dtype().is(py::dtype::of<float>())) {
              throw UsageError("allreduce: the array holds " + std::string(py::str(a.dtype())) +
                               "; only float32 is summed");
            }
            if (!(a.flags() & py::array::c_style)) {
              throw UsageError("allreduce: the array is not C-contiguous (sum a contiguous copy, then copy it back)");
            }
            if (!a.writeable()) throw UsageError("allreduce: the array is read-only; the sum is written in place");
            float* data = static_cast<float*>(a.mutable_data());
            const auto n = static_cast<size_t>(a.size());
            py::gil_scoped_release release;
            g.allreduce_sum(data, n);
          },
          py::arg("array"), "Replaces a float32 C-contiguous array with its element-wise sum over the ranks.")
      .def("destroy", &ProcessGroup::destroy, py::call_guard<py::gil_scoped_release>());
}

}  // namespace

PYBIND11_MODULE(_partita, m) {
  m.doc() = "Partita's native half: the embedded runtime, partition folders, the partitioner, the node loader";

  // In this order: a signature shows a class by its Python name once the class is registered.
  bind_errors(m);
  bind_runtime(m);
  bind_partitioner(m);
  bind_graph(m);
  bind_node_loader(m);
  bind_link_loader(m);
  bind_split_epoch(m);
  bind_process_group(m);
  bind_stores(m);  // partita.pyg.FeatureStore and GraphStore (python/store_bindings.h)
}

#include "python/store_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "python/feature_lookup.h"
#include "python/graph_handle.h"

namespace py = pybind11;

namespace partita::python {

namespace {

// `bytes` as a numpy array of `dtype` and `shape` over its own memory (no copy): the vector
// moves into a capsule that numpy keeps as the array's base.
py::array adopt_bytes(std::vector<char>&& bytes, DType dtype, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<char>(std::move(bytes));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<char>*>(p); });
  return py::array(py::dtype(std::string(dtype_name(dtype))), std::move(shape), owned->data(), base);
}

py::array adopt_ids(std::vector<int64_t>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<int64_t>(std::move(values));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return py::array_t<int64_t>(std::move(shape), owned->data(), base);
}

std::chrono::milliseconds store_timeout(double seconds) {
  if (!(seconds > 0) || seconds > 3600) {
    std::ostringstream text;
    text << "FeatureStore: timeout " << seconds << " s (must be more than 0 and at most 3600)";
    throw UsageError(text.str());
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

void bind_stores(py::module& m) {
  py::class_<FeatureLookup>(m, "_FeatureLookup")
      .def(py::init([](std::shared_ptr<GraphHandle> graph, double timeout, const std::string& features) {
             if (!graph) throw UsageError("FeatureStore: graph is None");
             const std::chrono::milliseconds deadline = store_timeout(timeout);
             py::gil_scoped_release release;
             return std::make_unique<FeatureLookup>(std::move(graph), deadline, features);
           }),
           py::arg("graph"), py::arg("timeout"), py::arg("features"))
      .def(
          "attributes",
          [](const FeatureLookup& f) {
            py::list out;
            for (const NodeAttribute& a : f.attributes()) {
              out.append(py::make_tuple(a.name, std::string(dtype_name(a.dtype)), py::tuple(py::cast(a.row_shape))));
            }
            return out;
          },
          "(name, numpy dtype name, row shape) of each node attribute the partitions hold.")
      .def(
          "get",
          [](FeatureLookup& f, const std::string& name, py::array_t<int64_t, py::array::c_style> ids) {
            if (ids.ndim() != 1) {
              throw UsageError("FeatureStore: the index must be one-dimensional, not of " +
                               std::to_string(ids.ndim()) + " dimensions");
            }
            const NodeAttribute& a = f.attribute(name);
            std::vector<int64_t> wanted(ids.data(), ids.data() + ids.size());
            std::vector<char> rows;
            {
              py::gil_scoped_release release;
              f.get(name, wanted, rows);
            }
            std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(wanted.size())};
            for (int64_t d : a.row_shape) shape.push_back(static_cast<py::ssize_t>(d));
            return adopt_bytes(std::move(rows), a.dtype, std::move(shape));
          },
          py::arg("name"), py::arg("ids"),
          "The rows of attribute `name` of the nodes `ids` (original ids), one request per owning part.")
      .def_property_readonly("requests_per_part", &FeatureLookup::requests_per_part)
      .def("close", &FeatureLookup::close, py::call_guard<py::gil_scoped_release>());

  m.def(
      "_edge_index",
      [](std::shared_ptr<GraphHandle> graph) {
        if (!graph) throw UsageError("GraphStore: graph is None");
        std::vector<int64_t> edges;
        {
          py::gil_scoped_release release;
          edges = original_edge_index(*graph);
        }
        const auto m = static_cast<py::ssize_t>(edges.size() / 2);
        return adopt_ids(std::move(edges), {2, m});
      },
      py::arg("graph"),
      "The graph's edges [2, E] in original node ids, column e the original edge e (sources, then destinations).");
}

}  // namespace partita::python

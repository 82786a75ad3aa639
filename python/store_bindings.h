// The bindings of partita.pyg.FeatureStore's and GraphStore's native half
// (python/feature_lookup.h): partita._partita._FeatureLookup and _edge_index.
#pragma once

#include <pybind11/pybind11.h>

namespace partita::python {

void bind_stores(pybind11::module& m);

}  // namespace partita::python

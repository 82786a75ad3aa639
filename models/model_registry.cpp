#include "models/model_registry.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <string>

#include "base/error.h"

namespace partita {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, HostModuleFactory> factories;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Held while a factory runs: the default generator is seeded for it alone.
std::mutex& construction_mutex() {
  static std::mutex m;
  return m;
}

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Torch's default CPU generator seeded with `seed` while it lives, then as it was.
class SeededDefaultGenerator {
 public:
  explicit SeededDefaultGenerator(uint64_t seed) : generator_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    saved_ = generator_.get_state();
    generator_.set_current_seed(seed);
  }
  ~SeededDefaultGenerator() {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(saved_);
  }
  SeededDefaultGenerator(const SeededDefaultGenerator&) = delete;
  SeededDefaultGenerator& operator=(const SeededDefaultGenerator&) = delete;

 private:
  at::Generator generator_;
  at::Tensor saved_;
};

}  // namespace

void register_host_module(const std::string& name, HostModuleFactory factory) {
  if (!valid_name(name)) {
    throw UsageError("register_model: '" + name + "' is not a model name (1-64 characters of A-Z, a-z, 0-9, _ . -)");
  }
  if (!factory) throw UsageError("register_model: the factory of '" + name + "' is empty");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.factories.emplace(name, std::move(factory)).second) {
    throw UsageError("register_model: '" + name + "' is registered already (unregister_model first to replace it)");
  }
}

bool unregister_model(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.factories.erase(name) > 0;
}

std::vector<std::string> registered_models() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

HostModule build_host_module(const ModelConfig& config, uint64_t seed) {
  HostModuleFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto found = r.factories.find(config.name);
    if (found != r.factories.end()) factory = found->second;
  }
  if (!factory) {
    throw UsageError("model.name: no model '" + config.name + "' is registered in this process (registered: " +
                     joined(registered_models()) +
                     "); a host application registers its own with register_model before it runs jobs or daemons");
  }
  HostModule host;
  try {
    std::lock_guard<std::mutex> lock(construction_mutex());
    SeededDefaultGenerator seeded(seed);
    host = factory(config);
  } catch (const c10::Error& e) {
    throw Error("model '" + config.name + "': its factory failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error("model '" + config.name + "': its factory failed: " + e.what());
  }
  if (!host.module || !host.forward) throw Error("model '" + config.name + "': its factory returned no module");
  if (host.module->parameters().empty()) throw Error("model '" + config.name + "': its module has no parameters to train");
  return host;
}

}  // namespace partita

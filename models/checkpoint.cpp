#include "models/checkpoint.h"

#include <ATen/ATen.h>
#include <c10/util/C++17.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "base/checksum.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/huge_pages.h"
#include "models/checkpoint_format.h"
#include "models/optimizer.h"

namespace partita {

namespace {

namespace format = checkpoint_format;

// A tensor the state holds, under its record name.
struct Named {
  std::string name;
  at::Tensor tensor;
};

// The key torch's optimisers file a parameter's state under.
std::string state_key(const at::Tensor& param) { return c10::guts::to_string(param.unsafeGetTensorImpl()); }

std::vector<at::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& p : group.params()) params.push_back(p);
  }
  return params;
}

std::vector<double> options_of(const torch::optim::OptimizerOptions& options, const std::string& kind) {
  if (kind == "adam") {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(options);
    return {o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), o.amsgrad() ? 1.0 : 0.0};
  }
  const auto& o = static_cast<const torch::optim::SGDOptions&>(options);
  return {o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov() ? 1.0 : 0.0};
}

void set_options(torch::optim::OptimizerOptions& options, const std::string& kind, const double* v) {
  if (kind == "adam") {
    auto& o = static_cast<torch::optim::AdamOptions&>(options);
    o.lr(v[0]).betas({v[1], v[2]}).eps(v[3]).weight_decay(v[4]).amsgrad(v[5] != 0);
  } else {
    auto& o = static_cast<torch::optim::SGDOptions&>(options);
    o.lr(v[0]).momentum(v[1]).dampening(v[2]).weight_decay(v[3]).nesterov(v[4] != 0);
  }
}

// Every tensor of the state, in the order the payload lists them.
std::vector<Named> state_tensors(const GnnModel& model, const torch::optim::Optimizer& optimizer,
                                 const std::string& kind) {
  std::vector<Named> out;
  for (const auto& p : model.named_parameters(/*recurse=*/true)) out.push_back({"parameter/" + p.key(), p.value()});
  for (const auto& b : model.named_buffers(/*recurse=*/true)) out.push_back({"buffer/" + b.key(), b.value()});
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    const std::vector<double> options = options_of(optimizer.param_groups()[g].options(), kind);
    out.push_back({"options/" + std::to_string(g), at::tensor(options, at::kDouble)});
  }
  const std::vector<at::Tensor> params = optimizer_params(optimizer);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto found = optimizer.state().find(state_key(params[i]));
    if (found == optimizer.state().end()) continue;  // no step has reached it yet
    const std::string prefix = "state/" + std::to_string(i) + "/";
    if (kind == "adam") {
      const auto& s = static_cast<const torch::optim::AdamParamState&>(*found->second);
      out.push_back({prefix + "step", at::scalar_tensor(s.step(), at::kLong)});
      out.push_back({prefix + "exp_avg", s.exp_avg()});
      out.push_back({prefix + "exp_avg_sq", s.exp_avg_sq()});
      if (s.max_exp_avg_sq().defined()) out.push_back({prefix + "max_exp_avg_sq", s.max_exp_avg_sq()});
    } else {
      const auto& s = static_cast<const torch::optim::SGDParamState&>(*found->second);
      if (s.momentum_buffer().defined()) out.push_back({prefix + "momentum_buffer", s.momentum_buffer()});
    }
  }
  return out;
}

// A tensor's element type as the project's arrays name it (base/dtype.h).
DType dtype_of_tensor(const at::Tensor& t, const std::string& name) {
  switch (t.scalar_type()) {
    case at::kByte: return DType::kUInt8;
    case at::kInt: return DType::kInt32;
    case at::kLong: return DType::kInt64;
    case at::kFloat: return DType::kFloat32;
    case at::kDouble: return DType::kFloat64;
    default: throw Error("checkpoint: " + name + " is of type " + std::string(c10::toString(t.scalar_type())) +
                         ", which a checkpoint cannot hold (uint8, int32, int64, float32, float64)");
  }
}

at::ScalarType scalar_type_of(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return at::kByte;
    case DType::kInt32: return at::kInt;
    case DType::kInt64: return at::kLong;
    case DType::kFloat32: return at::kFloat;
    case DType::kFloat64: return at::kDouble;
  }
  return at::kFloat;  // not reached: records hold valid codes only (PayloadReader)
}

uint64_t padding_to_data(uint64_t offset) {
  return (format::kDataAlignment - offset % format::kDataAlignment) % format::kDataAlignment;
}

// Appends to a buffer sized in advance (writer) or only counts (sizer: out == nullptr).
class PayloadWriter {
 public:
  explicit PayloadWriter(char* out) : out_(out) {}
  void bytes(const void* data, size_t n) {
    if (out_ != nullptr && n > 0) std::memcpy(out_ + offset_, data, n);
    offset_ += n;
  }
  template <typename T>
  void value(T v) { bytes(&v, sizeof v); }
  void text(const std::string& s) {
    value(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void zeros(size_t n) {
    if (out_ != nullptr) std::memset(out_ + offset_, 0, n);
    offset_ += n;
  }
  uint64_t offset() const { return offset_; }

 private:
  char* out_;
  uint64_t offset_ = 0;
};

void write_payload(PayloadWriter& w, const std::string& structure, const std::string& kind,
                   const std::vector<Named>& tensors) {
  w.text(structure);
  w.text(kind);
  w.value(static_cast<uint32_t>(tensors.size()));
  for (const Named& n : tensors) {
    w.text(n.name);
    w.value(static_cast<uint8_t>(dtype_of_tensor(n.tensor, n.name)));
    w.value(static_cast<uint8_t>(n.tensor.dim()));
    for (int64_t size : n.tensor.sizes()) w.value(size);
    const uint64_t data_bytes = static_cast<uint64_t>(n.tensor.numel()) * n.tensor.element_size();
    w.value(data_bytes);
    w.zeros(padding_to_data(w.offset()));
    w.bytes(n.tensor.data_ptr(), data_bytes);
  }
}

// A record of a version-2 payload, its data still in the caller's bytes.
struct Record {
  DType type;
  std::vector<int64_t> sizes;
  const char* data;
  uint64_t bytes;
};

struct Payload {
  std::string structure, optimizer;
  std::map<std::string, Record> records;
};

// Reads a version-2 payload, checking every length against the bytes left.
class PayloadReader {
 public:
  PayloadReader(const char* data, size_t size) : data_(data), size_(size) {}

  Payload read() {
    Payload p;
    p.structure = text("the model structure");
    p.optimizer = text("the optimizer's name");
    const auto count = value<uint32_t>("the record count");
    for (uint32_t r = 0; r < count; ++r) {
      std::string name = text("record " + std::to_string(r) + "'s name");
      Record record{};
      const auto type = value<uint8_t>(name + "'s type");
      if (!dtype_is_valid(type)) throw Error("checkpoint: " + name + " has type code " + std::to_string(type) + ", not one of 1-5");
      record.type = static_cast<DType>(type);
      const auto rank = value<uint8_t>(name + "'s rank");
      if (rank > format::kMaxRank) throw Error("checkpoint: " + name + " has rank " + std::to_string(rank) + ", over 8");
      uint64_t elements = 1;
      for (uint8_t d = 0; d < rank; ++d) {
        const auto size = value<int64_t>(name + "'s sizes");
        if (size < 0) throw Error("checkpoint: " + name + " has a negative size");
        record.sizes.push_back(size);
        if (size != 0 && elements > (uint64_t{1} << 62) / static_cast<uint64_t>(size)) {
          throw Error("checkpoint: " + name + " has more elements than any file can hold");
        }
        elements *= static_cast<uint64_t>(size);
      }
      record.bytes = value<uint64_t>(name + "'s data length");
      if (record.bytes != elements * dtype_size(record.type)) {
        throw Error("checkpoint: " + name + " holds " + std::to_string(record.bytes) + " bytes for " +
                    std::to_string(elements) + " elements of " + std::string(dtype_name(record.type)));
      }
      skip(padding_to_data(offset_), name + "'s padding");
      record.data = data_ + offset_;
      skip(record.bytes, name + "'s data");
      if (!p.records.emplace(std::move(name), std::move(record)).second) {
        throw Error("checkpoint: record " + std::to_string(r) + " repeats the name of an earlier one");
      }
    }
    if (offset_ != size_) throw Error("checkpoint: " + std::to_string(size_ - offset_) + " bytes after its last record");
    return p;
  }

 private:
  void need(uint64_t n, const std::string& what) {
    if (n > size_ - offset_) throw Error("checkpoint: truncated inside " + what);
  }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    offset_ += n;
  }
  template <typename T>
  T value(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + offset_, sizeof v);
    offset_ += sizeof v;
    return v;
  }
  std::string text(const std::string& what) {
    const auto n = value<uint32_t>(what);
    if (n > format::kMaxText) throw Error("checkpoint: " + what + " is " + std::to_string(n) + " bytes long, over 4096");
    need(n, what);
    std::string s(data_ + offset_, n);
    offset_ += n;
    return s;
  }

  const char* data_;
  size_t size_;
  uint64_t offset_ = 0;
};

std::string shape_text(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// The record `name`, checked against the tensor it will fill (its type and shape).
const Record& matching(const Payload& p, const std::string& name, at::ScalarType type, c10::IntArrayRef sizes) {
  const auto found = p.records.find(name);
  if (found == p.records.end()) throw Error("checkpoint: holds no " + name);
  const Record& r = found->second;
  if (scalar_type_of(r.type) != type || c10::IntArrayRef(r.sizes) != sizes) {
    throw Error("checkpoint: " + name + " is " + std::string(c10::toString(scalar_type_of(r.type))) + " " +
                shape_text(r.sizes) + ", the model's is " + std::string(c10::toString(type)) + " " + shape_text(sizes));
  }
  return r;
}

// The model structure and optimiser a state was saved with, against those it loads into.
void check_saved_by(const std::string& structure, const std::string& optimizer_kind, const GnnModel& model,
                    const torch::optim::Optimizer& optimizer) {
  if (structure != model.config().structure()) {
    throw Error("checkpoint: saved from a " + structure + " model, loading into a " + model.config().structure() + " one");
  }
  if (optimizer_kind != optimizer_name(optimizer)) {
    throw Error("checkpoint: saved with the " + optimizer_kind + " optimizer, loading into " + optimizer_name(optimizer));
  }
}

at::Tensor owned(const Record& r) {
  return at::from_blob(const_cast<char*>(r.data), r.sizes, at::dtype(scalar_type_of(r.type))).clone();
}

void load_version_2(GnnModel& model, torch::optim::Optimizer& optimizer, const char* data, size_t size) {
  const Payload p = PayloadReader(data, size).read();
  check_saved_by(p.structure, p.optimizer, model, optimizer);
  const std::string kind = p.optimizer;
  // Every record checked before anything changes; `used` counts them so none is left over.
  size_t used = 0;
  std::vector<std::pair<at::Tensor, const Record*>> copies;
  for (const auto& n : model.named_parameters(true)) {
    copies.emplace_back(n.value(), &matching(p, "parameter/" + n.key(), n.value().scalar_type(), n.value().sizes()));
  }
  for (const auto& n : model.named_buffers(true)) {
    copies.emplace_back(n.value(), &matching(p, "buffer/" + n.key(), n.value().scalar_type(), n.value().sizes()));
  }
  used += copies.size();
  const size_t groups = optimizer.param_groups().size();
  std::vector<const Record*> options(groups);
  for (size_t g = 0; g < groups; ++g) {
    const auto count = static_cast<int64_t>(options_of(optimizer.param_groups()[g].options(), kind).size());
    options[g] = &matching(p, "options/" + std::to_string(g), at::kDouble, {count});
  }
  used += groups;
  const std::vector<at::Tensor> params = optimizer_params(optimizer);
  std::vector<std::unique_ptr<torch::optim::OptimizerParamState>> states(params.size());
  const auto field = [&](size_t i, const char* name) -> const Record* {
    const std::string full = "state/" + std::to_string(i) + "/" + name;
    if (p.records.count(full) == 0) return nullptr;
    ++used;
    return &matching(p, full, params[i].scalar_type(), params[i].sizes());
  };
  for (size_t i = 0; i < params.size(); ++i) {
    if (kind == "adam") {
      const std::string step = "state/" + std::to_string(i) + "/step";
      if (p.records.count(step) == 0) continue;
      const Record& s = matching(p, step, at::kLong, {});
      ++used;
      const Record* avg = field(i, "exp_avg");
      const Record* avg_sq = field(i, "exp_avg_sq");
      if (avg == nullptr || avg_sq == nullptr) {
        throw Error("checkpoint: the adam state of parameter " + std::to_string(i) + " lacks exp_avg or exp_avg_sq");
      }
      const Record* max_sq = field(i, "max_exp_avg_sq");
      auto state = std::make_unique<torch::optim::AdamParamState>();
      int64_t steps;
      std::memcpy(&steps, s.data, sizeof steps);
      state->step(steps);
      state->exp_avg(owned(*avg));
      state->exp_avg_sq(owned(*avg_sq));
      if (max_sq != nullptr) state->max_exp_avg_sq(owned(*max_sq));
      states[i] = std::move(state);
    } else if (const Record* momentum = field(i, "momentum_buffer")) {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(owned(*momentum));
      states[i] = std::move(state);
    }
  }
  if (used != p.records.size()) {
    throw Error("checkpoint: holds " + std::to_string(p.records.size() - used) +
                " record(s) this model and optimizer have no place for");
  }

  at::NoGradGuard no_grad;
  for (auto& [tensor, record] : copies) {
    tensor.copy_(at::from_blob(const_cast<char*>(record->data), record->sizes, at::dtype(scalar_type_of(record->type))));
  }
  for (size_t g = 0; g < groups; ++g) {
    set_options(optimizer.param_groups()[g].options(), kind, reinterpret_cast<const double*>(options[g]->data));
  }
  optimizer.state().clear();
  for (size_t i = 0; i < params.size(); ++i) {
    if (states[i]) optimizer.state()[state_key(params[i])] = std::move(states[i]);
  }
}

void load_torch_archive(GnnModel& model, torch::optim::Optimizer& optimizer, const char* payload, size_t length) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(payload, length);
    c10::IValue structure, optimizer_kind;
    archive.read("structure", structure);
    archive.read("optimizer", optimizer_kind);
    check_saved_by(structure.toStringRef(), optimizer_kind.toStringRef(), model, optimizer);
    torch::serialize::InputArchive model_archive, optimizer_archive;
    archive.read("model", model_archive);
    archive.read("optimizer_state", optimizer_archive);
    model.load(model_archive);
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw Error(std::string("checkpoint: unreadable: ") + e.what_without_backtrace());
  }
}

}  // namespace

std::vector<char> save_training_state(const GnnModel& model, const torch::optim::Optimizer& optimizer) {
  const std::string kind = optimizer_name(optimizer);
  std::vector<Named> tensors = state_tensors(model, optimizer, kind);
  for (Named& n : tensors) n.tensor = n.tensor.contiguous();
  const std::string structure = model.config().structure();
  PayloadWriter sizer(nullptr);
  write_payload(sizer, structure, kind, tensors);

  std::vector<char> bytes;  // tens of MB, each first write a page fault: 2 MB pages
  resize_on_huge_pages(bytes, sizeof(format::Envelope) + sizer.offset());
  PayloadWriter writer(bytes.data() + sizeof(format::Envelope));
  write_payload(writer, structure, kind, tensors);
  format::Envelope envelope{};
  std::memcpy(envelope.magic, format::kMagic, sizeof format::kMagic);
  envelope.version = format::kVersion;
  envelope.length = writer.offset();
  envelope.checksum = checksum(bytes.data() + sizeof envelope, writer.offset());
  std::memcpy(bytes.data(), &envelope, sizeof envelope);
  return bytes;
}

void load_training_state(GnnModel& model, torch::optim::Optimizer& optimizer, const std::vector<char>& bytes) {
  format::Envelope envelope{};
  if (bytes.size() < sizeof envelope) {
    throw Error("checkpoint: " + std::to_string(bytes.size()) + " bytes, too short to be one");
  }
  std::memcpy(&envelope, bytes.data(), sizeof envelope);
  if (std::memcmp(envelope.magic, format::kMagic, sizeof format::kMagic) != 0) {
    throw Error("checkpoint: not a Partita checkpoint (bad magic)");
  }
  if (envelope.version != format::kVersion && envelope.version != format::kTorchArchiveVersion) {
    throw Error("checkpoint: format version " + std::to_string(envelope.version) + ", this build reads versions " +
                std::to_string(format::kTorchArchiveVersion) + " and " + std::to_string(format::kVersion));
  }
  const char* payload = bytes.data() + sizeof envelope;
  const size_t length = bytes.size() - sizeof envelope;
  if (envelope.length != length) {
    throw Error("checkpoint: truncated or padded (" + std::to_string(length) + " bytes of payload, the header says " +
                std::to_string(envelope.length) + ")");
  }
  if (checksum(payload, length) != envelope.checksum) {
    throw Error("checkpoint: checksum mismatch, the bytes are corrupt");
  }
  if (envelope.version == format::kTorchArchiveVersion) {
    load_torch_archive(model, optimizer, payload, length);
  } else {
    load_version_2(model, optimizer, payload, length);
  }
}

}  // namespace partita

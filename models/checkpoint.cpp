#include "models/checkpoint.h"

#include <torch/serialize/archive.h>

#include <cstring>
#include <sstream>
#include <string>

#include "base/checksum.h"
#include "base/error.h"
#include "models/optimizer.h"

namespace partita {

namespace {

constexpr char kMagic[8] = {'P', 'R', 'T', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;

// magic, version, payload length, payload checksum; then the payload (torch's archive).
struct Envelope {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(Envelope) == 32, "the envelope is a fixed 32-byte header");

}  // namespace

std::vector<char> save_training_state(const GnnModel& model,
                                      const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  archive.write("structure", c10::IValue(model.config().structure()));
  archive.write("optimizer", c10::IValue(optimizer_name(optimizer)));
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  optimizer.save(optimizer_archive);
  archive.write("optimizer_state", optimizer_archive);
  std::ostringstream stream;
  archive.save_to(stream);
  const std::string payload = stream.str();

  Envelope envelope{};
  std::memcpy(envelope.magic, kMagic, sizeof kMagic);
  envelope.version = kVersion;
  envelope.length = payload.size();
  envelope.checksum = checksum(payload.data(), payload.size());
  std::vector<char> bytes(sizeof envelope + payload.size());
  std::memcpy(bytes.data(), &envelope, sizeof envelope);
  std::memcpy(bytes.data() + sizeof envelope, payload.data(), payload.size());
  return bytes;
}

void load_training_state(GnnModel& model, torch::optim::Optimizer& optimizer,
                         const std::vector<char>& bytes) {
  Envelope envelope{};
  if (bytes.size() < sizeof envelope) {
    throw Error("checkpoint: " + std::to_string(bytes.size()) + " bytes, too short to be one");
  }
  std::memcpy(&envelope, bytes.data(), sizeof envelope);
  if (std::memcmp(envelope.magic, kMagic, sizeof kMagic) != 0) {
    throw Error("checkpoint: not a Partita checkpoint (bad magic)");
  }
  if (envelope.version != kVersion) {
    throw Error("checkpoint: format version " + std::to_string(envelope.version) +
                ", this build reads version " + std::to_string(kVersion));
  }
  const char* payload = bytes.data() + sizeof envelope;
  const size_t length = bytes.size() - sizeof envelope;
  if (envelope.length != length) {
    throw Error("checkpoint: truncated or padded (" + std::to_string(length) +
                " bytes of payload, the header says " + std::to_string(envelope.length) + ")");
  }
  if (checksum(payload, length) != envelope.checksum) {
    throw Error("checkpoint: checksum mismatch, the bytes are corrupt");
  }

  try {
    torch::serialize::InputArchive archive;
    archive.load_from(payload, length);
    c10::IValue structure, optimizer_kind;
    archive.read("structure", structure);
    archive.read("optimizer", optimizer_kind);
    if (structure.toStringRef() != model.config().structure()) {
      throw Error("checkpoint: saved from a " + structure.toStringRef() +
                  " model, loading into a " + model.config().structure() + " one");
    }
    if (optimizer_kind.toStringRef() != optimizer_name(optimizer)) {
      throw Error("checkpoint: saved with the " + optimizer_kind.toStringRef() +
                  " optimizer, loading into " + optimizer_name(optimizer));
    }
    torch::serialize::InputArchive model_archive, optimizer_archive;
    archive.read("model", model_archive);
    archive.read("optimizer_state", optimizer_archive);
    model.load(model_archive);
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw Error(std::string("checkpoint: unreadable: ") + e.what_without_backtrace());
  }
}

}  // namespace partita

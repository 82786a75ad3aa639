#include "actors/batch_messages.h"

#include <string>

#include "base/error.h"

namespace partita {

void encode_hop_request(const BatchAssembly& assembly, int part, uint64_t request_id, Encoder& encoder,
                        std::vector<char>& out) {
  encoder.hop_request(request_id, assembly.key(), assembly.hop(), assembly.hop_input(part),
                      assembly.config().fingerprint(), out);
}

void take_hop_reply(BatchAssembly& assembly, int part, uint64_t request_id, Span<const char> bytes) {
  DecodedHopReply reply;
  try {
    reply = decode_hop_reply(bytes, static_cast<int64_t>(assembly.hop_input(part).nodes.size()));
  } catch (const Error& e) {
    throw Error(part_name(part) + ": hop request failed: " + e.what());
  }
  if (reply.request_id != request_id) {
    throw Error(part_name(part) + ": hop reply to request " + std::to_string(reply.request_id) + ", expected " +
                std::to_string(request_id));
  }
  // The merge joins owned outputs; the copy is of this hop's answer only, a small part of
  // a batch.
  HopOutput& out = assembly.hop_output(part);
  out.offsets.assign(reply.offsets.begin(), reply.offsets.end());
  out.neighbors.assign(reply.neighbors.begin(), reply.neighbors.end());
  out.edge_ids.assign(reply.edge_ids.begin(), reply.edge_ids.end());
  out.edge_types.assign(reply.edge_types.begin(), reply.edge_types.end());
}

void encode_feature_request(const BatchAssembly& assembly, int part, Rows rows, uint64_t request_id,
                            Encoder& encoder, std::vector<char>& out) {
  encode_feature_request(assembly, rows, assembly.rows_of(part), request_id, encoder, out);
}

void encode_feature_request(const BatchAssembly& assembly, Rows rows, Span<const int64_t> ids, uint64_t request_id,
                            Encoder& encoder, std::vector<char>& out) {
  encoder.feature_request(request_id, "node", assembly.name_of(rows), ids, out);
}

size_t take_feature_reply(BatchAssembly& assembly, int part, Rows rows, uint64_t request_id, Span<const char> bytes) {
  const size_t n = assembly.rows_of(part).size();
  const auto place = [&](auto tag) -> size_t {
    using T = decltype(tag);
    DecodedFeatureReply reply;
    Span<const T> values;
    try {
      reply = decode_feature_reply(bytes, static_cast<int64_t>(n));
      if (reply.request_id != request_id) {
        throw Error("reply to request " + std::to_string(reply.request_id) + ", expected " +
                    std::to_string(request_id));
      }
      values = reply.values.as<T>(("attribute 'node/" + assembly.name_of(rows) + "'").c_str());
    } catch (const Error& e) {
      throw Error(part_name(part) + ": feature request (" + rows_name(rows) + ") failed: " + e.what());
    }
    if (n == 0) return 0;
    assembly.set_width(part, rows, static_cast<int64_t>(values.size() / n));
    place_rows(assembly.rows_target(part, rows), reinterpret_cast<const char*>(values.data()), 0, n);
    return values.size() * sizeof(T);
  };
  return rows == Rows::kX ? place(float{}) : place(int64_t{});
}

void check_rows_header(const RowsTarget& target, uint64_t request_id, Span<const char> head, uint64_t body_bytes) {
  const std::string what = part_name(target.part) + ": feature request (" + rows_name(target.rows) + ") failed: ";
  DecodedFeatureRowsHeader h;
  try {
    h = decode_feature_rows_header(head, static_cast<int64_t>(target.positions.size()));
  } catch (const Error& e) {
    throw Error(what + e.what());
  }
  if (h.request_id != request_id) {
    throw Error(what + "reply to request " + std::to_string(h.request_id) + ", expected " + std::to_string(request_id));
  }
  if (h.dtype != target.dtype) {
    throw Error(what + "rows of " + std::string(dtype_name(h.dtype)) + ", expected " +
                std::string(dtype_name(target.dtype)));
  }
  if (h.bytes != target.bytes() || body_bytes != h.bytes) {
    throw Error(what + std::to_string(h.bytes) + " bytes of rows (" + std::to_string(body_bytes) + " sent), expected " +
                std::to_string(target.bytes()) + ": rows of another width than other partitions'");
  }
}

}  // namespace partita

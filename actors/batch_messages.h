// The messages of batch assembly: a BatchAssembly's (graph/batch_assembly.h) requests to
// the partitions it does not hold, encoded (messages/codec.h), and their replies decoded
// into it. Every reply is validated (its request id, its size against what was asked)
// and a bad one throws Error naming the partition and the request, so nothing a peer sends
// reaches the pure steps unchecked.
#pragma once

#include <cstdint>
#include <vector>

#include "base/span.h"
#include "graph/batch_assembly.h"
#include "messages/codec.h"

namespace partita {

// The hop request for `part`'s share of the assembly's current frontier.
void encode_hop_request(const BatchAssembly& assembly, int part, uint64_t request_id, Encoder& encoder,
                        std::vector<char>& out);
// Decodes `part`'s hop reply into the assembly's hop output for that part.
void take_hop_reply(BatchAssembly& assembly, int part, uint64_t request_id, Span<const char> reply);

// The feature request for `part`'s rows of one attribute: all of them, or those of `ids`
// (a subset of rows_of(part): the misses of a cache).
void encode_feature_request(const BatchAssembly& assembly, int part, Rows rows, uint64_t request_id,
                            Encoder& encoder, std::vector<char>& out);
void encode_feature_request(const BatchAssembly& assembly, Rows rows, Span<const int64_t> ids, uint64_t request_id,
                            Encoder& encoder, std::vector<char>& out);
// Places the rows of `part`'s feature reply; returns their bytes.
size_t take_feature_reply(BatchAssembly& assembly, int part, Rows rows, uint64_t request_id, Span<const char> reply);

// Checks the head of a channel reply for `target` (its request id, and rows of the dtype,
// count and width the target expects): Error naming the partition (a RemoteError's message
// when the head is an error reply).
void check_rows_header(const RowsTarget& target, uint64_t request_id, Span<const char> head, uint64_t body_bytes);

}  // namespace partita

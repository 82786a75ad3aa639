// partita_fuzz_seeds OUT CORPUS EXAMPLES SLICES: writes the seed corpus of every fuzz target
// to OUT/<target>/, in the input form that target reads (fuzz_input.h):
//   - valid inputs written by the project's own writers (the codec's Encoder, CAF's
//     serialiser, write_npy, write_array, write_npy_folder, a partitioned graph's META.json
//     and arrays), small enough that a fuzzer runs thousands of them a second;
//   - the broken inputs of the test corpus (CORPUS: tests/corpus/readers), which each reader
//     must reject, packed the same way;
//   - the example jobs (EXAMPLES: examples/*.yaml);
//   - small slices of the real datasets (SLICES: fuzz/seeds: AIFB's N-Triples and splits,
//     MovieLens's two CSV files), whole lines, a few KiB each;
//   - TLS handshakes as a client and a server send them (tls_handshake).
//   - BASP headers as a member sends them to CAF after the handshake (basp_stream).
//   - an embedding shard's request frames as a trainer sends them (shard_request) and its
//     checkpoints as it saves them (shard_checkpoint), in shard_harness.h's form.
// scripts/fuzz.sh runs it before fuzzing; the fuzzers then grow their corpora from these.
#include <caf/binary_serializer.hpp>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/array_file.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/shard_harness.h"
#include "messages/caf_types.h"
#include "messages/codec.h"
#include "messages/sampled_batch.h"
#include "partitioner/generators.h"
#include "partitioner/npy.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "partitioner/readers.h"
#include "runtime/cluster/cluster_protocol.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"
#include "runtime/transport/wire_format.h"

namespace fs = std::filesystem;
using namespace partita;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Seeds {
 public:
  Seeds(const fs::path& out, const std::string& target) : dir_(out / target) { fs::create_directories(dir_); }
  void add(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  void add(const std::string& name, const std::vector<char>& bytes, char prefix) {
    add(name, std::string(1, prefix) + std::string(bytes.begin(), bytes.end()));
  }
  // The files `names` of `folder` as one input (fuzz_input.h's separator between them).
  void add_folder(const std::string& name, const fs::path& folder, const std::vector<std::string>& names) {
    std::string input;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) input += fuzz::kFileSeparator;
      if (fs::exists(folder / names[i])) input += read_bytes(folder / names[i]);
    }
    // Trailing empty pieces say nothing: drop them, so small folders give small inputs.
    while (input.size() >= fuzz::kFileSeparator.size() &&
           input.compare(input.size() - fuzz::kFileSeparator.size(), std::string::npos,
                         std::string(fuzz::kFileSeparator)) == 0) {
      input.resize(input.size() - fuzz::kFileSeparator.size());
    }
    add(name, input);
  }
  // Every entry of `corpus` whose name starts with `prefix`: files as they are, folders
  // packed, the names of their files in `names` order; a folder's one file of another
  // name (LINQS's X.content) takes the slot of the name with the same extension.
  void add_corpus(const fs::path& corpus, const std::string& prefix, const std::vector<std::string>& names) {
    for (const auto& entry : fs::directory_iterator(corpus)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      if (!entry.is_directory()) {
        add("corpus_" + name, read_bytes(entry.path()));
        continue;
      }
      std::vector<std::string> slots(names.size());
      for (const auto& file : fs::directory_iterator(entry.path())) {
        for (size_t i = 0; i < names.size(); ++i) {
          if (file.path().filename() == names[i] ||
              (file.path().extension() == fs::path(names[i]).extension() && names[i].rfind("g.", 0) == 0)) {
            slots[i] = file.path().filename().string();
          }
        }
      }
      std::string input;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (i > 0) input += fuzz::kFileSeparator;
        if (!slots[i].empty()) input += read_bytes(entry.path() / slots[i]);
      }
      add("corpus_" + name, input);
    }
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

Dataset small_sbm(int64_t feature_dim) {
  SbmOptions o;
  o.num_nodes = 40;
  o.num_classes = 2;
  o.avg_degree = 3;
  o.feature_dim = feature_dim;
  o.threads = 1;
  return generate_sbm(o);
}

Dataset small_hetero() {
  HeteroOptions o;
  o.num_papers = 12;
  o.num_authors = 6;
  o.num_venues = 2;
  o.num_classes = 2;
  o.feature_dim = 2;
  o.citations_per_paper = 1;
  o.authors_per_paper = 1;
  o.threads = 1;
  return generate_hetero(o);
}

void codec_seeds(const fs::path& out) {
  Seeds s(out, "codec");
  Encoder encoder(/*max_chunk_bytes=*/64);  // small chunks: split tensors get fuzzed too
  std::vector<char> b;
  auto add = [&](const std::string& name, MessageKind kind) { s.add(name, b, static_cast<char>(kind)); };
  std::vector<int64_t> nodes{3, 1, 4, 1, 5, 9, 2, 6}, trees{0, 0, 1, 1, 2, 2, 3, 3};
  encoder.hop_request(1, {1, 2, 3}, 2, HopInput{nodes, trees, nodes}, 5, b);
  add("hop_request", MessageKind::kHopRequest);
  HopOutput hop;
  hop.offsets = {0, 3, 3, 5};
  hop.neighbors = {7, 8, 9, 10, 11};
  hop.edge_ids = {1, 2, 3, 4, 5};
  hop.edge_types = {0, 1, 0, 1, 0};
  encoder.hop_reply(2, hop, b);
  add("hop_reply", MessageKind::kHopReply);
  std::vector<int64_t> ids(12, 7);
  encoder.feature_request(3, "node", "x", ids, b);
  add("feature_request", MessageKind::kFeatureRequest);
  std::vector<float> values(6 * 8, 0.25f);
  encoder.feature_reply(4, TensorView(DType::kFloat32, {6, 8}, values.data(), 192), b);
  add("feature_reply", MessageKind::kFeatureReply);
  encoder.error_reply(5, WireErrorCode::kNotFound, "no attribute node/y", b);
  add("error_reply", MessageKind::kErrorReply);
  encoder.channel_offer("127.0.0.1", 5000, 77, 2, b);
  add("channel_offer", MessageKind::kChannelOffer);
  MiniBatch batch;
  batch.node_ids = {5, 6, 7};
  batch.row = {1, 2, 2};
  batch.col = {0, 0, 1};
  batch.edge_ids = {3, 4, 5};
  batch.num_sampled_nodes = {1, 2};
  batch.num_sampled_edges = {0, 3};
  batch.input_ids = {5};
  batch.input_local = {0};
  batch.batch_size = 1;
  batch.feature_dim = 2;
  batch.x = {1, 2, 3, 4, 5, 6};
  batch.y = {0, 1, 1};
  encoder.mini_batch({1, 2, 3}, batch, b);
  add("mini_batch", MessageKind::kMiniBatch);
  encoder.sampler_ack(3, b);
  add("sampler_ack", MessageKind::kSamplerAck);
  encoder.feature_rows_header(8, DType::kFloat32, {1000, 128}, b);
  add("feature_rows_header", MessageKind::kFeatureRowsHeader);
  EpochPlan plan;
  plan.order = {4, 8, 15, 16, 23};
  plan.offsets = {0, 2, 5};
  plan.job_seed = 7;
  plan.epoch = 1;
  plan.excluded_src = {4, 16};
  plan.excluded_dst = {8, 23};
  plan.excluded_offsets = {0, 1, 2};
  plan.times = {10, 20, 30, 40, 50};
  encoder.link_plan(plan, b);
  add("link_plan", MessageKind::kLinkPlan);

  // The CAF types, serialised as CAF sends them (fuzz_caf_messages.cpp's order).
  Seeds c(out, "caf_messages");
  auto serialise = [&](const std::string& name, char which, const auto& value) {
    std::vector<char> bytes;
    caf::binary_serializer sink(static_cast<caf::execution_unit*>(nullptr), bytes);
    auto copy = value;
    auto failed = sink(copy);
    if (failed) std::fprintf(stderr, "partita_fuzz_seeds: cannot serialise %s\n", name.c_str());
    c.add(name, bytes, which);
  };
  runtime::NodeInfo info{"node-a", "127.0.0.1:4000", "0.1.0", 2, int64_t{1} << 34};
  runtime::NodeLoad load{1 << 30, 1 << 30, {"partition", "sampler"}, {"job-1", ""}, {"unit-a"}};
  runtime::NodeStatus node{1, info, load, true, "", 12};
  runtime::JobStatus job;
  job.id = "job-1";
  job.state = "running";
  job.nodes = {"node-a"};
  job.actors = 2;
  job.submitted = true;
  job.message = "recovering from node-b's loss";
  job.output = "/runs/job-1";
  job.owner = "driver-1";
  job.partitions = {"127.0.0.1:4000"};
  runtime::ClusterStatus status{"0.1.0", 1000, 5000, {node}, {job}};
  serialise("node_info", 0, info);
  serialise("node_load", 1, load);
  serialise("node_status", 2, node);
  serialise("job_status", 3, job);
  serialise("cluster_status", 4, status);
  serialise("encoded", 5, Encoded{b});
  SampledBatch sampled = SampledBatch::of(batch, {1, 2, 3});
  serialise("sampled_batch", 6, sampled);
  serialise("sampled_batch_failed", 6, SampledBatch::failed(WireErrorCode::kBadRequest, "no such partition"));
}

void transport_seeds(const fs::path& out) {
  Seeds s(out, "transport");
  auto frame = [](const std::string& bytes) {
    unsigned char length[runtime::wire::kFrameLengthBytes];
    runtime::wire::encode_frame_length(bytes.size(), length);
    return std::string(reinterpret_cast<char*>(length), sizeof(length)) + bytes;
  };
  unsigned char hello[runtime::wire::kHelloBytes];
  runtime::wire::encode_hello({42, 1}, hello);
  s.add("headers_hello", std::string(1, 0) + std::string(reinterpret_cast<char*>(hello), sizeof(hello)));
  unsigned char op[runtime::wire::kOpHeaderBytes];
  runtime::wire::encode_op_header({1, 2, 1000}, op);
  s.add("headers_op", std::string(1, 0) + std::string(reinterpret_cast<char*>(op), sizeof(op)));
  // Requests: two frames; an empty one; one over the limit.
  s.add("server_requests", std::string(1, 1) + frame("feature request") + frame("another"));
  s.add("server_empty", std::string(1, 1) + frame(""));
  unsigned char huge[runtime::wire::kFrameLengthBytes];
  runtime::wire::encode_frame_length(runtime::wire::kMaxRequestBytes + 1, huge);
  s.add("server_oversized", std::string(1, 1) + std::string(reinterpret_cast<char*>(huge), sizeof(huge)));
  // Replies: head, then body length and body.
  s.add("client_replies", std::string(1, 2) + frame("head") + frame("body bytes") + frame("h2") + frame(""));
}

// What `role`'s TLS session sends first when its peer has sent `from_peer` (and then
// nothing): a client's hello, or a server's answer to one.
std::string first_flight(runtime::tls::Session::Role role, const std::string& from_peer) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends) != 0) throw Error("socketpair failed");
  if (!from_peer.empty()) (void)::send(ends[1], from_peer.data(), from_peer.size(), 0);
  std::string flight;
  {
    runtime::tls::Session session(runtime::tls::process_credentials(), ends[0], role);
    try {
      session.handshake();  // writes its flight, then waits for the peer (WANT_READ)
    } catch (const Error&) {
    }
    char buffer[1 << 14];
    for (ssize_t n; (n = ::recv(ends[1], buffer, sizeof(buffer), 0)) > 0;) flight.append(buffer, static_cast<size_t>(n));
  }
  ::close(ends[0]);
  ::close(ends[1]);
  return flight;
}

void transport_tls_seeds(const fs::path& out) {
  // The plaintext target's streams run inside TLS there: the same seeds.
  Seeds s(out, "transport_tls");
  for (const auto& entry : fs::directory_iterator(out / "transport")) s.add(entry.path().filename().string(), read_bytes(entry.path()));
}

// fuzz_tls_handshake.cpp's input: 0 (a server reads) and a client's first flight, 1 (a
// client reads) and a server's answer to a ClientHello, both as members of another CA send
// them.
void tls_handshake_seeds(const fs::path& out) {
  Seeds s(out, "tls_handshake");
  runtime::tls::set_process_credentials(runtime::tls::Credentials::ephemeral());
  const std::string client_hello = first_flight(runtime::tls::Session::Role::client, "");
  s.add("client_hello", std::string(1, 0) + client_hello);
  s.add("server_answer", std::string(1, 1) + first_flight(runtime::tls::Session::Role::server, client_hello));
  runtime::tls::set_process_credentials(nullptr);
}

// A BASP header (32 bytes, network order: operation, padding, flags, payload length,
// operation data, source and destination actor) and `payload` zero bytes after it.
std::string basp_message(uint8_t operation, uint32_t payload, uint64_t operation_data, uint64_t source,
                         uint64_t destination) {
  std::string bytes(32, '\0');
  bytes[0] = static_cast<char>(operation);
  const auto put = [&](size_t at, uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes[at + i] = static_cast<char>(value >> (8 * (width - 1 - i)));
  };
  put(4, payload, 4);
  put(8, operation_data, 8);
  put(16, source, 8);
  put(24, destination, 8);
  return bytes + std::string(payload, '\0');
}

// fuzz_basp_stream.cpp's input: what a member sends CAF after the TLS handshake. The
// headers CAF's broker reads (a client handshake, messages to actor 1, heartbeats), with
// payloads the fuzzer fills in.
void basp_stream_seeds(const fs::path& out) {
  Seeds s(out, "basp_stream");
  const std::string heartbeat = basp_message(6, 0, 0, 0, 0);
  s.add("heartbeats", heartbeat + heartbeat);
  s.add("client_handshake", basp_message(1, 40, 0, 0, 0));
  s.add("client_handshake_then_message", basp_message(1, 40, 0, 0, 0) + basp_message(2, 24, 0, 0, 1));
  s.add("monitor_and_down", basp_message(4, 16, 0, 0, 0) + basp_message(5, 16, 0, 0, 0));
}

std::string gzipped(const std::string& text) {
  std::string out(compressBound(static_cast<uLong>(text.size())) + 32, '\0');
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer, as gzip(1) writes.
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw Error("deflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int done = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (done != Z_STREAM_END) throw Error("deflate failed");
  out.resize(z.total_out);
  return out;
}

// fuzz_ntriples.cpp's input: a mode byte, then the graph, trainingSet.tsv and testSet.tsv.
void ntriples_seeds(const fs::path& out, const fs::path& corpus, const fs::path& slices) {
  Seeds s(out, "ntriples");
  const std::string sep(fuzz::kFileSeparator);
  auto add_folder = [&](const std::string& name, const fs::path& folder) {
    std::string graph, mode(1, 0);
    for (const auto& file : fs::directory_iterator(folder)) {
      const std::string f = file.path().filename().string();
      if (f.size() > 3 && f.compare(f.size() - 3, 3, ".nt") == 0) graph = read_bytes(file.path());
      if (f.size() > 6 && f.compare(f.size() - 6, 6, ".nt.gz") == 0) graph = read_bytes(file.path()), mode[0] = 1;
    }
    auto part = [&](const char* file) { return fs::exists(folder / file) ? read_bytes(folder / file) : std::string(); };
    const std::string splits = sep + part("trainingSet.tsv") + sep + part("testSet.tsv");
    s.add(name, mode + graph + splits);
    if (mode[0] == 0 && !graph.empty()) {
      s.add(name + "_gzipped_by_harness", std::string(1, 2) + graph + splits);
      s.add(name + "_gz", std::string(1, 1) + gzipped(graph) + splits);
    }
  };
  add_folder("aifb_slice", slices / "aifb_slice");
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("ntriples_", 0) == 0) add_folder("corpus_" + name, entry.path());
  }
  Seeds m(out, "movielens");
  m.add_folder("movielens_slice", slices / "movielens_slice", fuzz::kMovielensFiles);
  m.add_corpus(corpus, "movielens_", fuzz::kMovielensFiles);
}

void npy_seeds(const fs::path& out, const fs::path& corpus) {
  Seeds s(out, "npy");
  const fs::path tmp = s.dir() / "tmp.npy";
  std::vector<int64_t> ids{0, 1, 2, 3, 4, 5};
  std::vector<float> x{1, 2, 3, 4, 5, 6};
  std::vector<double> xd{1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> mask{1, 0, 1};
  std::vector<int32_t> narrow{7, 8};
  auto add = [&](const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data) {
    write_npy(tmp.string(), dtype, shape, data);
    s.add(name, read_bytes(tmp));
  };
  add("int64_2x3", DType::kInt64, {2, 3}, ids.data());
  add("float32_3x2", DType::kFloat32, {3, 2}, x.data());
  add("float64_6", DType::kFloat64, {6}, xd.data());
  add("uint8_3", DType::kUInt8, {3}, mask.data());
  add("int32_2", DType::kInt32, {2}, narrow.data());
  add("int64_0", DType::kInt64, {0}, ids.data());
  fs::remove(tmp);
  for (const auto& entry : fs::directory_iterator(corpus)) {  // the single files (folders are npy_folder's)
    if (entry.path().extension() == ".npy") s.add("corpus_" + entry.path().filename().string(), read_bytes(entry.path()));
  }
}

void folder_seeds(const fs::path& out, const fs::path& corpus, const fs::path& scratch) {
  Seeds npy(out, "npy_folder");
  for (auto& [name, dataset] : std::vector<std::pair<std::string, Dataset>>{
           {"sbm", small_sbm(4)}, {"sbm_no_features", small_sbm(0)}, {"hetero", small_hetero()}}) {
    const fs::path dir = scratch / name;
    write_npy_folder(dataset, dir.string());
    npy.add_folder(name, dir, fuzz::kNpyFolderFiles);
  }
  npy.add_corpus(corpus, "npy_", fuzz::kNpyFolderFiles);

  Seeds linqs(out, "linqs");
  linqs.add("cora_like", std::string("10\t1 0 1\tTheory\n20\t0 1 1\tRule_Learning\n30\t1 1 0\tTheory\n") +
                             std::string(fuzz::kFileSeparator) + "10\t20\n20\t30\n30\t10\n10\t99\n");
  linqs.add_corpus(corpus, "linqs_", fuzz::kLinqsFiles);

  Seeds triples(out, "triples");
  triples.add("fb_like", std::string("/m/a\t/r/x\t/m/b\n/m/b\t/r/y\t/m/c\r\n/m/c\t/r/x\t/m/a\n") +
                             std::string(fuzz::kFileSeparator) + "/m/a\t/r/y\t/m/c\n" +
                             std::string(fuzz::kFileSeparator) + "/m/b\t/r/x\t/m/c\n");
  triples.add_corpus(corpus, "triples_", fuzz::kTriplesFiles);

  Seeds edgelist(out, "edgelist");
  edgelist.add("small", "# a comment\n0 1\n1 2\n2\t0\n\n3 1 # trailing\n");
  edgelist.add_corpus(corpus, "edgelist_", {});

  // A partitioned graph: its META.json and a few of its array files.
  const Dataset d = small_sbm(4);
  PartitionOptions options;
  options.num_parts = 2;
  options.threads = 1;
  const fs::path parts = scratch / "parts";
  partition_dataset(d, options, parts.string());
  Seeds meta(out, "meta_json");
  meta.add("partitioned", read_bytes(parts / "META.json"));
  Seeds arrays(out, "array_file");
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(parts)) {
    if (entry.is_regular_file() && entry.path().filename() != "META.json" && n < 8 &&
        fs::file_size(entry.path()) < 4096) {
      arrays.add("part_" + std::to_string(n++), read_bytes(entry.path()));
    }
  }
  const fs::path tmp = scratch / "a.bin";
  write_array(tmp.string(), std::vector<int64_t>{1, 2, 3});
  arrays.add("int64_3", read_bytes(tmp));
  write_array(tmp.string(), DType::kFloat32, {2, 2}, std::vector<float>{1, 2, 3, 4}.data());
  arrays.add("float32_2x2", read_bytes(tmp));
}

void job_seeds(const fs::path& out, const fs::path& examples) {
  Seeds s(out, "job_yaml");
  for (const auto& entry : fs::directory_iterator(examples)) {
    if (entry.path().extension() == ".yaml") s.add(entry.path().filename().string(), read_bytes(entry.path()));
  }
}


// A shard's frames (each op, well formed, for the shard the first byte chooses) and its
// checkpoints (after a step, of both optimisers, and of version 1).
void shard_seeds(const fs::path& out) {
  namespace wire = runtime::wire;
  const auto frame = [](wire::ShardOp op, int32_t trainer, int64_t count, int64_t first, std::vector<int64_t> ids,
                        std::vector<float> values) {
    std::vector<char> bytes(wire::kShardRequestHeadBytes + ids.size() * sizeof(int64_t) + values.size() * sizeof(float));
    wire::encode_shard_request_head({op, trainer, count, first}, reinterpret_cast<unsigned char*>(bytes.data()));
    if (!ids.empty()) std::memcpy(bytes.data() + wire::kShardRequestHeadBytes, ids.data(), ids.size() * sizeof(int64_t));
    if (!values.empty()) {
      std::memcpy(bytes.data() + wire::kShardRequestHeadBytes + ids.size() * sizeof(int64_t), values.data(),
                  values.size() * sizeof(float));
    }
    return fuzz::request_piece(bytes);
  };
  Seeds requests(out, "shard_request");
  Seeds checkpoints(out, "shard_checkpoint");
  const int64_t a = fuzz::kFirstId, b = fuzz::kFirstId + 1;
  // 2 rows of dim 2, one trainer, Adagrad; 2 trainers; SparseAdam; 4 rows of dim 4.
  for (const uint8_t choice : {uint8_t{0x21}, uint8_t{0x25}, uint8_t{0x29}, uint8_t{0x43}}) {
    const EmbeddingShardConfig config = fuzz::shard_config(choice);
    const size_t dim = static_cast<size_t>(config.dim);
    const std::string name = std::to_string(choice);
    const std::string shard(1, static_cast<char>(choice));
    const std::vector<float> two_rows(2 * dim, 0.5f), one_row(dim, -1.0f);
    requests.add("step_" + name, shard + frame(wire::ShardOp::kPush, 0, 2, 0, {a, b}, two_rows) +
                                     (config.num_trainers > 1 ? frame(wire::ShardOp::kPush, 1, 0, 0, {}, {}) : "") +
                                     frame(wire::ShardOp::kRead, 0, 2, 0, {b, a}, {}) +
                                     frame(wire::ShardOp::kReadRange, 0, 2, a, {}, {}));
    requests.add("write_" + name, shard + frame(wire::ShardOp::kWrite, 0, 1, 0, {b}, one_row) +
                                      frame(wire::ShardOp::kRead, 0, 1, 0, {b}, {}));
    requests.add("empty_" + name, shard + frame(wire::ShardOp::kPush, 0, 0, 0, {}, {}) +
                                      frame(wire::ShardOp::kReadRange, 0, 0, a, {}, {}));

    std::unique_ptr<EmbeddingShard> trained = fuzz::make_shard(choice);
    for (int t = 0; t < config.num_trainers; ++t) {
      trained->push(t, std::vector<int64_t>{b}, std::vector<float>(dim, 0.5f));
    }
    const std::vector<char> saved = trained->save(std::chrono::seconds(1));
    checkpoints.add("trained_" + name, shard + std::string(1, '\0') + std::string(saved.begin(), saved.end()));
    if (config.optimizer.kind == RowOptimizerKind::kAdagrad) {
      // Version 1: magic "PTSHARD1", checksum, header {begin, end, dim}, rows, state.
      std::string v1(saved.begin(), saved.begin() + 16);
      v1[7] = '1';
      v1 += std::string(saved.begin() + 16, saved.begin() + 16 + 3 * sizeof(int64_t));
      v1 += std::string(saved.begin() + 16 + 5 * sizeof(int64_t), saved.end());
      checkpoints.add("version1_" + name, shard + std::string(1, '\1') + v1);  // the harness writes its checksum
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: partita_fuzz_seeds OUT CORPUS EXAMPLES SLICES\n");
    return 2;
  }
  const fs::path out = argv[1], corpus = argv[2], examples = argv[3], slices = argv[4];
  const fs::path scratch = out / ".scratch";
  try {
    fs::create_directories(scratch);
    codec_seeds(out);
    transport_seeds(out);
    transport_tls_seeds(out);
    tls_handshake_seeds(out);
    basp_stream_seeds(out);
    ntriples_seeds(out, corpus, slices);
    npy_seeds(out, corpus);
    folder_seeds(out, corpus, scratch);
    job_seeds(out, examples);
    shard_seeds(out);
    fs::remove_all(scratch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "partita_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}

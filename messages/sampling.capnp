# The sampling and feature protocol between sampler and partition actors, and what sampler
# actors answer. Every message is an Envelope, so a receiver can tell an error reply from
# the reply it expected.
@0x8a395a095de68c23;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("partita::wire");

using import "tensor.capnp".Tensor;

# Keys all randomness of a batch (graph/neighbor_sampler.h SampleKey).
struct SampleKey {
  seed @0 :UInt64;
  epoch @1 :UInt64;
  batch @2 :UInt64;
}

# One hop of sampling for frontier nodes that one partition owns (graph HopInput).
struct HopRequest {
  requestId @0 :UInt64;
  key @1 :SampleKey;
  hop @2 :Int32;
  nodes @3 :Tensor;  # int64 global ids
  trees @4 :Tensor;  # int64, disjoint mode only; absent or empty otherwise
  times @5 :Tensor;  # int64, temporal sampling only; absent or empty otherwise
  configFingerprint @6 :UInt64;  # SamplerConfig::fingerprint(): must match the partition's
}

# The sampled neighbours of node i are entries [offsets[i], offsets[i+1]) (graph HopOutput).
struct HopReply {
  requestId @0 :UInt64;
  offsets @1 :Tensor;    # int64, one more than the request's nodes, starting at 0
  neighbors @2 :Tensor;  # int64 global node ids
  edgeIds @3 :Tensor;    # int64 global edge ids
  edgeTypes @4 :Tensor;  # int32, heterogeneous graphs only
}

# The rows of attribute (group, name) for global ids (graph/feature_store.h).
struct FeatureRequest {
  requestId @0 :UInt64;
  group @1 :Text;
  name @2 :Text;
  ids @3 :Tensor;  # int64
}

struct FeatureReply {
  requestId @0 :UInt64;
  values @1 :Tensor;  # one row per requested id
}

enum ErrorCode {
  unknown @0;
  badRequest @1;   # malformed or inconsistent message
  outOfRange @2;   # an id the receiver does not own
  notFound @3;     # no such attribute
  internal @4;
}

struct ErrorReply {
  requestId @0 :UInt64;
  code @1 :ErrorCode;
  message @2 :Text;
}

# Where a partition's feature channel waits for one client (actors/feature_channel.h): a
# TCP data plane that carries feature replies between processes without CAF's
# serialisation copies. The partition actor hands one out per channel request; the client
# must present the token and its id in its hello.
struct ChannelOffer {
  host @0 :Text;
  port @1 :UInt16;
  token @2 :UInt64;
  client @3 :UInt32;
}

# The head of a feature reply on a feature channel: the rows follow it as a raw body, row
# after row (little-endian, dtype and shape as given), so that the receiver reads them
# straight to where they go instead of out of a message.
struct FeatureRowsHeader {
  requestId @0 :UInt64;
  dtype @1 :UInt32;
  shape @2 :List(Int64);  # [rows, ...]; the body holds exactly these bytes
}

# A sampled mini-batch (graph/mini_batch.h), as a sampler actor emits it.
struct MiniBatch {
  key @0 :SampleKey;
  batchSize @1 :Int64;
  nodeIds @2 :Tensor;          # int64 global ids
  row @3 :Tensor;              # int64 local indices into nodeIds
  col @4 :Tensor;              # int64 local indices into nodeIds
  edgeIds @5 :Tensor;          # int64 global edge ids, one per row entry
  edgeTypes @6 :Tensor;        # int32, heterogeneous graphs only
  numSampledNodes @7 :Tensor;  # int64 per hop, the seeds first
  numSampledEdges @8 :Tensor;  # int64 per hop
  batch @9 :Tensor;            # int64 tree per node, disjoint mode only
  inputIds @10 :Tensor;        # int64 the seeds as given
  inputLocal @11 :Tensor;      # int64 local index of each seed
  x @12 :Tensor;               # float32 [nodes, featureDim], absent without features
  y @13 :Tensor;               # int64 [nodes], absent without labels
}

# A sampler actor's answer to a control message.
struct SamplerAck {
  numBatches @0 :Int64;  # after an epoch message: the batches of its plan; otherwise 0
}

# A trainer's plan of link batches for its sampler (actors/protocol.h, link plan; graph
# EpochPlan): batch b samples around seeds[offsets[b], offsets[b+1]) keyed (seed, epoch,
# b), its hops leaving out the edges excludedSrc/Dst[excludedOffsets[b], ...) and their
# reverses.
struct LinkPlan {
  seed @0 :UInt64;
  epoch @1 :UInt64;
  seeds @2 :Tensor;            # int64 global ids
  offsets @3 :Tensor;          # int64 [batches + 1], from 0 to the seed count
  excludedSrc @4 :Tensor;      # int64 global ids
  excludedDst @5 :Tensor;      # int64 global ids, as many
  excludedOffsets @6 :Tensor;  # int64 [batches + 1], from 0 to the excluded count
  times @7 :Tensor;            # int64 per seed, temporal sampling only; absent or empty otherwise
}

struct Envelope {
  union {
    unset @0 :Void;  # the default: a zeroed or empty message decodes to this, and is rejected
    hopRequest @1 :HopRequest;
    hopReply @2 :HopReply;
    featureRequest @3 :FeatureRequest;
    featureReply @4 :FeatureReply;
    errorReply @5 :ErrorReply;
    channelOffer @6 :ChannelOffer;
    miniBatch @7 :MiniBatch;
    samplerAck @8 :SamplerAck;
    retired9 @9 :Void;  # was a sampler's benchmark-only run report; refused
    featureRowsHeader @10 :FeatureRowsHeader;
    linkPlan @11 :LinkPlan;
  }
}

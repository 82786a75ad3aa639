# The sampling and feature protocol between sampler and partition actors. Every message is
# an Envelope, so a receiver can tell an error reply from the reply it expected.
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

struct Envelope {
  union {
    unset @0 :Void;  # the default: a zeroed or empty message decodes to this, and is rejected
    hopRequest @1 :HopRequest;
    hopReply @2 :HopReply;
    featureRequest @3 :FeatureRequest;
    featureReply @4 :FeatureReply;
    errorReply @5 :ErrorReply;
  }
}

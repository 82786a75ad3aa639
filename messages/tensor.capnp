# A tensor on the wire: element type, shape and the flat little-endian bytes.
@0xd47ea62ffd8fe1ac;

using Cxx = import "/capnp/c++.capnp";
# Without a namespace the generated global `Tensor` clashes with libtorch's.
$Cxx.namespace("partita::wire");

struct Tensor {
  # A partita::DType code (base/dtype.h); 0 is never valid, so an unset tensor is caught.
  dtype @0 :UInt32;
  shape @1 :List(Int64);
  # The bytes in order, split because one Data holds at most 2^29-1 bytes. Every chunk but
  # the last is a multiple of 8 bytes, so no element straddles two chunks. Tensors that fit
  # one chunk (all but those over 511 MiB) are decoded as a view, without a copy.
  chunks @2 :List(Data);
}

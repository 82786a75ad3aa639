// The glue between batch assembly and its messages: channel reply heads are checked against
// what was asked, naming the partition and the request.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/batch_messages.h"
#include "base/error.h"
#include "messages/codec.h"

namespace partita {
namespace {

TEST(BatchMessages, AChannelReplyHeadMustMatchWhatWasAsked) {
  std::vector<int64_t> positions{4, 1, 7};
  RowsTarget target;
  target.part = 3;
  target.rows = Rows::kX;
  target.row_bytes = 16;
  target.dtype = DType::kFloat32;
  target.positions = Span<const int64_t>(positions);
  Encoder encoder;
  std::vector<char> head;
  auto problem = [&](uint64_t id, uint64_t body) {
    try {
      check_rows_header(target, id, Span<const char>(head), body);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  encoder.feature_rows_header(9, DType::kFloat32, {3, 4}, head);
  EXPECT_EQ(problem(9, 48), "");
  EXPECT_NE(problem(8, 48).find("reply to request 9, expected 8"), std::string::npos);
  EXPECT_NE(problem(9, 40).find("partition 3"), std::string::npos);
  encoder.feature_rows_header(9, DType::kFloat32, {3, 5}, head);
  EXPECT_NE(problem(9, 60).find("another width"), std::string::npos);
  encoder.feature_rows_header(9, DType::kFloat32, {2, 4}, head);
  EXPECT_NE(problem(9, 32).find("2 rows, expected 3"), std::string::npos);
  encoder.feature_rows_header(9, DType::kInt32, {3, 4}, head);
  EXPECT_NE(problem(9, 48).find("rows of int32, expected float32"), std::string::npos);
  encoder.error_reply(9, WireErrorCode::kNotFound, "partition 3 has no attribute 'node/x'", head);
  EXPECT_NE(problem(9, 0).find("has no attribute 'node/x'"), std::string::npos);
}

}  // namespace
}  // namespace partita

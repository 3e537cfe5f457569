#include "verify/size_argument.h"

#include <gtest/gtest.h>

#include "model/advice_error.h"

namespace gcprof::advisor {
namespace {

using Argv = std::vector<std::string>;

TEST(SizeArgument, ReplacesTheRecordedSize) {
  Argv argv = {"python3", "train.py", "--layers", "4", "--batch", "4", "--steps", "3"};
  EXPECT_EQ(withSize(argv, "--batch {size}", 4, 16),
            (Argv{"python3", "train.py", "--layers", "4", "--batch", "16", "--steps", "3"}));
  Argv joined = {"train", "--batch=4"};
  EXPECT_EQ(withSize(joined, "--batch={size}", 4, 9), (Argv{"train", "--batch=9"}));
}

TEST(SizeArgument, RefusesATemplateTheCommandDoesNotHave) {
  Argv argv = {"train", "--layers", "4", "--batch", "8"};
  EXPECT_THROW(withSize(argv, "--batch {size}", 4, 16), AdviceError);  // recorded at 8, not 4
  EXPECT_THROW(withSize(argv, "--batch 4", 4, 16), AdviceError);       // no {size}
}

TEST(SizeArgument, LossesAtAnotherSizeAreCheckedForBeingFinite) {
  Verification v;
  v.gates = {{"job completed", true, ""}, {"losses match", false, "differ"}};
  Trace m;
  m.scalars = {{0, "loss", 2.5}, {1, "loss", 2.4}};
  compareLossesAtSize(v, m, 16, 2);
  EXPECT_EQ(v.verdict, "PASS");
  EXPECT_EQ(v.gates[1].name, "losses finite");
  m.scalars[1].value = std::nan("");
  compareLossesAtSize(v, m, 16, 2);
  EXPECT_EQ(v.verdict, "FAIL");
}

}  // namespace
}  // namespace gcprof::advisor

// Re-running a job at another size: the user says how the size is passed
// (`--size-arg "--batch {size}"`), and the recorded command has that
// argument at the recorded size; it is replaced by the one at the new size.
#pragma once

#include <string>
#include <vector>

#include "verify/verification.h"

namespace gcprof::advisor {

// `argv` with the template rendered at `from` replaced by it rendered at
// `to`. The template is split at spaces ("--batch {size}" is two
// arguments, "--batch={size}" one). Throws AdviceError when the template has
// no {size} or `argv` does not contain it rendered at `from`.
std::vector<std::string> withSize(const std::vector<std::string>& argv, const std::string& size_arg,
                                  int64_t from, int64_t to);

// A verification at another size than the baseline's: losses cannot match
// the baseline's (other data per step), so the losses gate checks that every
// step's loss was recorded and is finite instead. The other gates are
// verify's own.
void compareLossesAtSize(Verification& v, const Trace& measured, int64_t size, size_t baseline_steps);

// The same for step times: the baseline's step is of another size, so the
// predicted slowdown is against the plan's predicted no-checkpoint step at
// `size` (the plan's "baseline", which a what-if plan predicts at its size),
// and no measured slowdown is given. The step time gate, when there is one,
// still compares measured with predicted, both at `size`.
void compareStepsAtSize(Verification& v, const PlanFile& plan, const std::string& size_name, int64_t size,
                        int64_t recorded_size);

}  // namespace gcprof::advisor

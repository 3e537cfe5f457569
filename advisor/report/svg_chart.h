// The report's memory chart as inline SVG: baseline, predicted and measured
// live bytes over time, the budget line, and the units' forward/backward
// bands (checkpointed ones highlighted). No scripts, no external assets.
#pragma once

#include <string>

#include "report/report_data.h"

namespace gcprof::advisor {

std::string memoryChartSvg(const ReportData& r, int width = 960, int height = 380);

}  // namespace gcprof::advisor

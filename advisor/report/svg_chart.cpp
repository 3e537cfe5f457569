#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/text_escape.h"

namespace gcprof::advisor {
namespace {

// One colour per series, the same in the chart and its legend.
constexpr const char* kBaselineColor = "#7f7f7f";
constexpr const char* kPredictedColor = "#2b6cd4";
constexpr const char* kVerifiedColor = "#1a9850";
constexpr const char* kBudgetColor = "#d62728";
constexpr const char* kCheckpointedColor = "#f28e2b";

struct Frame {
  double left = 70, right = 20, top = 30, plot_h = 0, width = 0;
  double t_max = 1, y_max = 1;
  double x(double t) const { return left + (width - left - right) * t / t_max; }
  double y(double b) const { return top + plot_h - plot_h * b / y_max; }
};

// A step function: live bytes hold until the next event.
std::string stepPath(const std::vector<ChartPoint>& pts, const Frame& f) {
  std::ostringstream d;
  d.setf(std::ios::fixed);
  d.precision(1);
  double prev = 0;
  bool first = true;
  for (const ChartPoint& p : pts) {
    double x = f.x(std::max(0.0, p.x));
    if (first) d << "M" << x << "," << f.y(0);
    d << " L" << x << "," << f.y(prev) << " L" << x << "," << f.y(static_cast<double>(p.live));
    prev = static_cast<double>(p.live);
    first = false;
  }
  return d.str();
}

double niceStep(double range, int ticks) {
  double raw = range / ticks;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// Scaled so that every series and the budget fit, with room above the top.
Frame frameFor(const ReportData& r, int width, int height, double band_h) {
  Frame f;
  f.width = width;
  f.plot_h = height - f.top - 40 - band_h;
  double t_max = r.steps > 0 ? static_cast<double>(r.steps) : 1.0;
  Bytes y_max = std::max<Bytes>(r.v.budget, 1);
  for (const auto* c : {&r.baseline, &r.predicted, &r.measured}) {
    for (const ChartPoint& p : *c) {
      t_max = std::max(t_max, p.x);
      y_max = std::max(y_max, p.live);
    }
  }
  f.t_max = t_max;
  f.y_max = static_cast<double>(y_max) * 1.08;
  return f;
}

// Axes with round ticks: MiB up the side, steps (each run aligned on its own
// steps) or shares of the run along the bottom.
void writeAxes(std::ostream& s, const ReportData& r, const Frame& f, double band_h) {
  double mib_max = f.y_max / (1 << 20);
  double ystep = niceStep(mib_max, 5);
  for (double m = 0; m <= mib_max; m += ystep) {
    double y = f.y(m * (1 << 20));
    s << "<line x1=\"" << f.left << "\" x2=\"" << f.width - f.right << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#e4e4e4\"/>";
    s << "<text x=\"" << f.left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << m
      << " MiB</text>\n";
  }
  double axis_y = f.top + f.plot_h;
  int ticks = r.steps > 0 ? static_cast<int>(r.steps) : 4;
  for (int k = 0; k <= ticks; ++k) {
    double xv = r.steps > 0 ? k : k * f.t_max / ticks;
    double x = f.x(xv);
    s << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << f.top << "\" y2=\"" << axis_y + 4
      << "\" stroke=\"#eeeeee\"/>";
    if (r.steps > 0 && k < ticks)
      s << "<text x=\"" << f.x(k + 0.5) << "\" y=\"" << axis_y + band_h + 16
        << "\" text-anchor=\"middle\">step " << k << "</text>\n";
    else if (r.steps == 0)
      s << "<text x=\"" << x << "\" y=\"" << axis_y + band_h + 16 << "\" text-anchor=\"middle\">"
        << static_cast<int>(100.0 * k / ticks) << "% of the run</text>\n";
  }
  s << "<line x1=\"" << f.left << "\" x2=\"" << f.width - f.right << "\" y1=\"" << axis_y << "\" y2=\""
    << axis_y << "\" stroke=\"#555\"/>\n";
}

// Unit bands under the axis: forward on the upper row, backward below.
void writeBands(std::ostream& s, const ReportData& r, const Frame& f) {
  double axis_y = f.top + f.plot_h;
  for (const UnitBand& b : r.bands) {
    double x0 = f.x(std::max(0.0, b.x0));
    double x1 = std::max(x0 + 0.8, f.x(b.x1));
    double y = axis_y + 4 + (b.forward ? 0 : 11);
    s << "<rect class=\"band\" x=\"" << x0 << "\" y=\"" << y << "\" width=\"" << x1 - x0
      << "\" height=\"10\" fill=\"" << (b.checkpointed ? kCheckpointedColor : "#c9c9c9") << "\"><title>"
      << xmlEscape(b.unit) << (b.forward ? " forward" : " backward")
      << (b.checkpointed ? " (checkpointed)" : "") << "</title></rect>\n";
  }
}

void writeSeries(std::ostream& s, const ReportData& r, const Frame& f) {
  struct Series {
    const std::vector<ChartPoint>* pts;
    const std::string* name;
    const char* color;
    const char* dash;
  };
  const std::string verified = "verified (re-run)";
  for (const Series& ser : {Series{&r.baseline, &r.baseline_label, kBaselineColor, ""},
                            Series{&r.predicted, &r.predicted_label, kPredictedColor, "6 3"},
                            Series{&r.measured, &verified, kVerifiedColor, ""}}) {
    if (ser.pts->empty()) continue;
    s << "<path class=\"series\" d=\"" << stepPath(*ser.pts, f) << "\" fill=\"none\" stroke=\""
      << ser.color << "\" stroke-width=\"1.6\"" << (*ser.dash ? " stroke-dasharray=\"" : "") << ser.dash
      << (*ser.dash ? "\"" : "") << "><title>" << xmlEscape(*ser.name) << "</title></path>\n";
  }
  double by = f.y(static_cast<double>(r.v.budget));
  s << "<line class=\"budget\" x1=\"" << f.left << "\" x2=\"" << f.width - f.right << "\" y1=\"" << by
    << "\" y2=\"" << by << "\" stroke=\"" << kBudgetColor << "\" stroke-width=\"1.4\" stroke-dasharray=\"8 4\"/>";
  s << "<text x=\"" << f.width - f.right - 4 << "\" y=\"" << by - 5 << "\" text-anchor=\"end\" fill=\""
    << kBudgetColor << "\">budget " << xmlEscape(mib(r.v.budget)) << "</text>\n";
}

void writeLegend(std::ostream& s, const Frame& f) {
  double lx = f.left;
  for (const auto& [name, color] : std::vector<std::pair<std::string, const char*>>{
           {"baseline", kBaselineColor}, {"predicted", kPredictedColor}, {"verified", kVerifiedColor},
           {"budget", kBudgetColor}, {"checkpointed unit", kCheckpointedColor}}) {
    s << "<rect x=\"" << lx << "\" y=\"10\" width=\"12\" height=\"10\" fill=\"" << color << "\"/>"
      << "<text x=\"" << lx + 16 << "\" y=\"19\">" << name << "</text>\n";
    lx += 22 + 7.0 * name.size();
  }
}

}  // namespace

std::string memoryChartSvg(const ReportData& r, int width, int height) {
  double band_h = r.bands.empty() ? 0 : 26;
  Frame f = frameFor(r, width, height, band_h);
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"11\""
    << " role=\"img\" aria-label=\"live memory over time\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  writeAxes(s, r, f, band_h);
  writeBands(s, r, f);
  writeSeries(s, r, f);
  writeLegend(s, f);  // along the top
  s << "</svg>\n";
  return s.str();
}

}  // namespace gcprof::advisor

// A small SVG writer for validation plots: lines (or points) on a log2 x axis and a linear y
// axis, with a legend. Written by the project itself so docs/ plots regenerate from the tool.
#pragma once

#include <string>
#include <vector>

namespace tessera::calibration {

struct PlotSeries {
  std::string label;
  std::string color;               // CSS colour
  bool dashed = false;
  std::vector<double> x, y;        // x > 0 (log axis)
};

struct Plot {
  std::string title;
  std::string x_label, y_label;
  std::vector<PlotSeries> series;
};

// x ticks are labelled as byte sizes (1K, 1M, 1G).
std::string render_svg(const Plot& plot);
// Throws std::runtime_error naming the file when it cannot be written.
void write_svg(const std::string& path, const Plot& plot);

}  // namespace tessera::calibration

namespace tessera::calibration {

// Predicted against measured, one point per case, on log-log axes with the diagonal and a
// +-10% band: the validation report's picture.
struct ScatterPoint {
  std::string label;
  double measured = 0, predicted = 0;  // > 0
};
struct Scatter {
  std::string title, unit;
  std::vector<ScatterPoint> points;
};
std::string render_scatter_svg(const Scatter& scatter);
void write_scatter_svg(const std::string& path, const Scatter& scatter);

}  // namespace tessera::calibration

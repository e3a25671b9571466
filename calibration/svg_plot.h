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

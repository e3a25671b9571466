#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "calibration/svg_plot.h"

namespace tessera::calibration {

std::string render_scatter_svg(const Scatter& sc) {
  const double W = 640, H = 600, left = 80, right = 30, top = 40, bottom = 60;
  double lo = INFINITY, hi = 0;
  for (const ScatterPoint& p : sc.points) {
    lo = std::min({lo, p.measured, p.predicted});
    hi = std::max({hi, p.measured, p.predicted});
  }
  if (!(hi > 0)) lo = 1, hi = 10;
  const double l0 = std::floor(std::log10(lo)), l1 = std::max(l0 + 1, std::ceil(std::log10(hi)));
  auto X = [&](double v) { return left + (std::log10(v) - l0) / (l1 - l0) * (W - left - right); };
  auto Y = [&](double v) { return H - bottom - (std::log10(v) - l0) / (l1 - l0) * (H - top - bottom); };
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" << sc.title << "</text>\n";
  for (double l = l0; l <= l1 + 1e-9; l += 1) {
    const double v = std::pow(10, l);
    o << "<line x1=\"" << X(v) << "\" y1=\"" << top << "\" x2=\"" << X(v) << "\" y2=\"" << H - bottom
      << "\" stroke=\"#e4e4e4\"/><line x1=\"" << left << "\" y1=\"" << Y(v) << "\" x2=\"" << W - right
      << "\" y2=\"" << Y(v) << "\" stroke=\"#e4e4e4\"/>\n";
    o << "<text x=\"" << X(v) << "\" y=\"" << H - bottom + 16 << "\" text-anchor=\"middle\">" << v
      << "</text><text x=\"" << left - 6 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << v << "</text>\n";
  }
  const double a = std::pow(10, l0), b = std::pow(10, l1);
  o << "<line x1=\"" << X(a) << "\" y1=\"" << Y(a) << "\" x2=\"" << X(b) << "\" y2=\"" << Y(b)
    << "\" stroke=\"#444\"/>\n";
  for (double f : {0.9, 1.1})
    o << "<line x1=\"" << X(a) << "\" y1=\"" << Y(a * f) << "\" x2=\"" << X(b / f) << "\" y2=\"" << Y(b)
      << "\" stroke=\"#999\" stroke-dasharray=\"5,4\"/>\n";
  o << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">measured ("
    << sc.unit << ")</text>\n<text transform=\"translate(20," << (top + H - bottom) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">predicted (" << sc.unit << "); dashed: +-10%</text>\n";
  for (size_t i = 0; i < sc.points.size(); ++i) {
    const ScatterPoint& p = sc.points[i];
    o << "<circle cx=\"" << X(p.measured) << "\" cy=\"" << Y(p.predicted)
      << "\" r=\"4\" fill=\"#1f77b4\"><title>" << p.label << "</title></circle>\n";
    o << "<text x=\"" << X(p.measured) + 6 << "\" y=\"" << Y(p.predicted) - 4 << "\" font-size=\"10\">"
      << i + 1 << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

void write_scatter_svg(const std::string& path, const Scatter& sc) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out << render_scatter_svg(sc);
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace tessera::calibration

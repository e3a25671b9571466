#include "calibration/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::calibration {

namespace {
std::string size_label(double bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, "%g%s", bytes, units[u]);
  return text;
}
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}
}  // namespace

std::string render_svg(const Plot& plot) {
  const double W = 760, H = 460, left = 70, right = 20, top = 40, bottom = 60;
  double xmin = INFINITY, xmax = 0, ymax = 0;
  for (const PlotSeries& s : plot.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymax = std::max(ymax, s.y[i]);
    }
  if (!(xmax > 0)) xmin = 1, xmax = 2;
  const double lx0 = std::floor(std::log2(xmin)), lx1 = std::ceil(std::log2(xmax));
  const double ystep = ymax > 0 ? std::pow(10, std::floor(std::log10(ymax / 5))) *
                                      (ymax / 5 / std::pow(10, std::floor(std::log10(ymax / 5))) > 2 ? 5 : 2)
                                : 1;
  const double ytop = std::max(ystep, std::ceil(ymax / ystep) * ystep);
  auto X = [&](double x) { return left + (std::log2(x) - lx0) / std::max(1.0, lx1 - lx0) * (W - left - right); };
  auto Y = [&](double y) { return H - bottom - y / ytop * (H - top - bottom); };
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">"
    << escape(plot.title) << "</text>\n";
  for (double l = lx0; l <= lx1; l += 2) {
    o << "<line x1=\"" << X(std::exp2(l)) << "\" y1=\"" << top << "\" x2=\"" << X(std::exp2(l))
      << "\" y2=\"" << H - bottom << "\" stroke=\"#e4e4e4\"/>\n";
    o << "<text x=\"" << X(std::exp2(l)) << "\" y=\"" << H - bottom + 16
      << "\" text-anchor=\"middle\">" << size_label(std::exp2(l)) << "</text>\n";
  }
  for (double y = 0; y <= ytop + 1e-9; y += ystep) {
    o << "<line x1=\"" << left << "\" y1=\"" << Y(y) << "\" x2=\"" << W - right << "\" y2=\""
      << Y(y) << "\" stroke=\"#e4e4e4\"/>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">" << y
      << "</text>\n";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << W - left - right
    << "\" height=\"" << H - top - bottom << "\" fill=\"none\" stroke=\"#444\"/>\n";
  o << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">"
    << escape(plot.x_label) << "</text>\n";
  o << "<text transform=\"translate(18," << (top + H - bottom) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << escape(plot.y_label) << "</text>\n";
  for (size_t k = 0; k < plot.series.size(); ++k) {
    const PlotSeries& s = plot.series[k];
    o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << " points=\"";
    for (size_t i = 0; i < s.x.size(); ++i) o << X(s.x[i]) << "," << Y(s.y[i]) << " ";
    o << "\"/>\n";
    for (size_t i = 0; i < s.x.size(); ++i)
      o << "<circle cx=\"" << X(s.x[i]) << "\" cy=\"" << Y(s.y[i]) << "\" r=\"2.5\" fill=\""
        << s.color << "\"/>\n";
    const double ly = top + 16 + 18 * k;
    o << "<line x1=\"" << left + 12 << "\" y1=\"" << ly << "\" x2=\"" << left + 40 << "\" y2=\""
      << ly << "\" stroke=\"" << s.color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << "/>\n";
    o << "<text x=\"" << left + 46 << "\" y=\"" << ly + 4 << "\">" << escape(s.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

void write_svg(const std::string& path, const Plot& plot) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out << render_svg(plot);
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace tessera::calibration

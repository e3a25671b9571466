#include "calibration/measured_curve.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::calibration {

namespace {
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) {
    const auto a = cell.find_first_not_of(" \t\r");
    const auto b = cell.find_last_not_of(" \t\r");
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return out;
}
}  // namespace

MeasuredCurve read_measured_curve(const std::string& path, double busbw_factor) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read measured curve");
  MeasuredCurve curve;
  curve.path = path;
  std::string line;
  int number = 0, size_col = -1, time_col = -1, busbw_col = -1;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      curve.source.push_back(line.substr(line.find_first_not_of("# ", first)));
      continue;
    }
    const std::vector<std::string> cells = split(line);
    if (!header) {
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "size_bytes") size_col = int(i);
        if (cells[i] == "ip_time_us") time_col = int(i);
        if (cells[i] == "ip_busbw" || (cells[i] == "busbw" && busbw_col < 0)) busbw_col = int(i);
      }
      if (size_col < 0 || (time_col < 0 && busbw_col < 0))
        throw std::runtime_error(path + ":" + std::to_string(number) +
                                 ": header needs size_bytes and ip_time_us or ip_busbw");
      header = true;
      continue;
    }
    try {
      MeasuredPoint p;
      p.size_bytes = std::stoull(cells.at(size_col));
      if (time_col >= 0) {
        const double t = std::stod(cells.at(time_col)) * 1e-6;
        p.busbw_gbps = double(p.size_bytes) / t * busbw_factor / 1e9;
      } else {
        p.busbw_gbps = std::stod(cells.at(busbw_col));
      }
      curve.points.push_back(p);
    } catch (const std::exception&) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": not a row of numbers: " + line);
    }
  }
  if (curve.points.empty()) throw std::runtime_error(path + ": no measured rows");
  return curve;
}

}  // namespace tessera::calibration

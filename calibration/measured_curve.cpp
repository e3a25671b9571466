#include "calibration/measured_curve.h"

#include <cmath>

#include "calibration/csv_table.h"
#include "workloads/errors.h"
#include "workloads/limits.h"

namespace tessera::calibration {

namespace {
// The bus-bandwidth column: in-place first, as the time column is.
std::string busbw_column(const CsvTable& t) {
  if (t.has_column("ip_busbw")) return "ip_busbw";
  return t.has_column("busbw") ? "busbw" : "";
}
}  // namespace

MeasuredCurve read_measured_curve(const std::string& path, double busbw_factor) {
  const CsvTable table = read_csv_table(path, "measured curve");
  const bool timed = table.has_column("ip_time_us");
  const std::string busbw = busbw_column(table);
  if (!table.has_column("size_bytes") || (!timed && busbw.empty()))
    throw workloads::InputError(path + ": measured curve: the header needs size_bytes and ip_time_us or ip_busbw");
  MeasuredCurve curve;
  curve.path = path;
  curve.source = table.comments;
  for (const CsvRow& r : table.rows) {
    MeasuredPoint p;
    const double size = r.number("size_bytes");
    if (size != std::floor(size) || size > limits::kMaxOpBytes)
      r.fail("size_bytes", "must be a whole number of bytes in [1, 2^50] (got '" + r.text("size_bytes") + "')");
    p.size_bytes = uint64_t(size);
    p.busbw_gbps = timed ? size / (r.number("ip_time_us") * 1e-6) * busbw_factor / 1e9 : r.non_negative(busbw);
    curve.points.push_back(p);
  }
  if (curve.points.empty()) throw workloads::InputError(path + ": measured curve: no measured rows");
  return curve;
}

}  // namespace tessera::calibration

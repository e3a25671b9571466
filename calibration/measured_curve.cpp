#include "calibration/measured_curve.h"

#include <algorithm>
#include <cmath>

#include "calibration/csv_table.h"
#include "calibration/nccl_tests.h"
#include "workloads/errors.h"
#include "workloads/limits.h"

namespace tessera::calibration {

namespace {
// The bus-bandwidth column: in-place first, as the time column is.
std::string busbw_column(const CsvTable& t) {
  if (t.has_column("ip_busbw")) return "ip_busbw";
  return t.has_column("busbw") ? "busbw" : "";
}

// The distinct values of `column`, in file order, "a, b, c".
std::string values_of(const CsvTable& t, const std::string& column) {
  std::vector<std::string> seen;
  for (const CsvRow& r : t.rows)
    if (std::find(seen.begin(), seen.end(), r.text(column)) == seen.end()) seen.push_back(r.text(column));
  std::string list;
  for (const std::string& v : seen) list += (list.empty() ? "" : ", ") + v;
  return list;
}

// Whether `r` belongs to the selected curve; checks the selection against the file first.
class RowFilter {
 public:
  RowFilter(const CsvTable& t, const std::string& path, const CurveSelection& s) : selection_(s) {
    by_op_ = t.has_column("op") && !s.op.empty();
    by_dataset_ = t.has_column("dataset");
    if (!s.dataset.empty() && !by_dataset_)
      throw workloads::InputError(path + ": measured curve: no dataset column, so no dataset '" + s.dataset + "' to choose");
    if (by_dataset_ && s.dataset.empty() && values_of(t, "dataset").find(',') != std::string::npos)
      throw workloads::InputError(path + ": measured curve: several datasets (" + values_of(t, "dataset") +
                                  "): choose one (--dataset)");
    by_dataset_ = by_dataset_ && !s.dataset.empty();
    if (by_op_) check_present(t, path, "op", op_key(s.op), s.op);
    if (by_dataset_) check_present(t, path, "dataset", s.dataset, s.dataset);
  }
  bool operator()(const CsvRow& r) const {
    return (!by_op_ || op_key(r.text("op")) == op_key(selection_.op)) &&
           (!by_dataset_ || r.text("dataset") == selection_.dataset);
  }

 private:
  void check_present(const CsvTable& t, const std::string& path, const std::string& column,
                     const std::string& key, const std::string& asked) const {
    for (const CsvRow& r : t.rows)
      if ((column == "op" ? op_key(r.text(column)) : r.text(column)) == key) return;
    throw workloads::InputError(path + ": measured curve: no rows for " + column + " '" + asked + "' (the file has " +
                                values_of(t, column) + ")");
  }
  CurveSelection selection_;
  bool by_op_ = false, by_dataset_ = false;
};
}  // namespace

MeasuredCurve read_measured_curve(const std::string& path, double busbw_factor, const CurveSelection& selection) {
  const CsvTable table = read_csv_table(path, "measured curve");
  const bool timed = table.has_column("ip_time_us");
  const std::string busbw = busbw_column(table);
  if (!table.has_column("size_bytes") || (!timed && busbw.empty()))
    throw workloads::InputError(path + ": measured curve: the header needs size_bytes and ip_time_us or ip_busbw");
  MeasuredCurve curve;
  curve.path = path;
  curve.source = table.comments;
  const RowFilter selected(table, path, selection);
  for (const CsvRow& r : table.rows) {
    if (!selected(r)) continue;
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

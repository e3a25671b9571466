#include "calibration/csv_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "workloads/errors.h"
#include "workloads/limits.h"

namespace tessera::calibration {
namespace {

using workloads::InputError;

std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) out.push_back(trimmed(cell));
  if (!line.empty() && trimmed(line).back() == ',') out.push_back("");
  return out;
}

// The whole cell as a finite number, or NaN.
double parsed(const std::string& t) {
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return std::nan("");
  return v;
}

}  // namespace

bool CsvRow::has(const std::string& column) const {
  auto it = cells.find(column);
  return it != cells.end() && !it->second.empty();
}

void CsvRow::fail(const std::string& column, const std::string& what) const {
  throw InputError(file + ":" + std::to_string(line) + ": column '" + column + "': " + what);
}

const std::string& CsvRow::text(const std::string& column) const {
  if (!has(column)) fail(column, "missing (the layout needs it)");
  return cells.at(column);
}

double CsvRow::number(const std::string& column) const {
  const double v = parsed(text(column));
  if (!(v > 0)) fail(column, "must be a positive number (got '" + text(column) + "')");
  return v;
}

double CsvRow::non_negative(const std::string& column) const {
  const double v = parsed(text(column));
  if (!(v >= 0)) fail(column, "must be a number >= 0 (got '" + text(column) + "')");
  return v;
}

int64_t CsvRow::integer(const std::string& column) const {
  const double v = number(column);
  if (v != std::floor(v) || v > 1e15) fail(column, "must be a positive integer up to 1e15 (got '" + text(column) + "')");
  return static_cast<int64_t>(v);
}

bool CsvTable::has_column(const std::string& column) const {
  return std::find(header.begin(), header.end(), column) != header.end();
}

CsvTable read_csv_table(const std::string& path, const std::string& what) {
  const std::string problem = limits::input_file_problem(path);
  if (!problem.empty()) throw InputError(path + ": " + what + ": " + problem);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": " + what + ": cannot read");
  CsvTable table;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string t = trimmed(line);
    if (t.empty()) continue;
    if (t[0] == '#') {
      const auto text = t.find_first_not_of('#');
      table.comments.push_back(text == std::string::npos ? "" : trimmed(t.substr(text)));
      continue;
    }
    const std::vector<std::string> cells = split(line);
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (table.header.empty()) {
      std::set<std::string> seen;
      for (const std::string& c : cells)
        if (!c.empty() && !seen.insert(c).second) throw InputError(where + "column '" + c + "' named twice");
      table.header = cells;
      continue;
    }
    if (cells.size() != table.header.size())
      throw InputError(where + std::to_string(cells.size()) + " cells, the header has " +
                       std::to_string(table.header.size()));
    CsvRow row{path, number, {}};
    for (size_t i = 0; i < cells.size(); ++i) row.cells[table.header[i]] = cells[i];
    table.rows.push_back(std::move(row));
  }
  if (table.header.empty()) throw InputError(path + ": " + what + ": no header line");
  return table;
}

}  // namespace tessera::calibration

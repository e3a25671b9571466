// A CSV file of measured data, as tessera reads them (validation cases, measured collective
// curves): '#' lines carry the source, the first other line is the header, each further line a
// row of cells by column name. Every error is a workloads::InputError naming the file, line and
// column, the value and what is accepted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::calibration {

// One row: cells by column name, with the file and line for errors.
struct CsvRow {
  std::string file;
  int line = 0;
  std::map<std::string, std::string> cells;

  bool has(const std::string& column) const;  // present and not empty
  [[noreturn]] void fail(const std::string& column, const std::string& what) const;
  const std::string& text(const std::string& column) const;
  double number(const std::string& column) const;  // finite and positive, the whole cell
  double non_negative(const std::string& column) const;  // finite and >= 0, the whole cell
  int64_t integer(const std::string& column) const;  // a positive whole number up to 1e15
  std::string integer_text(const std::string& column) const { return std::to_string(integer(column)); }
};

struct CsvTable {
  std::vector<std::string> comments;  // the '#' lines, without the '#' and the blanks after it
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  bool has_column(const std::string& column) const;
};

// Reads `path` (a regular file within limits::kMaxInputFileBytes). A row with a different number
// of cells than the header, or a header naming a column twice, is an error; `what` names the kind
// of file in messages ("cases file", "measured curve").
CsvTable read_csv_table(const std::string& path, const std::string& what);

}  // namespace tessera::calibration

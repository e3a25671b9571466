#include "sc_main/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sc_main/input_error.h"

namespace tessera::app {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void cannot_write(const std::string& path, int error) {
  throw OutputError(path + ": cannot write (" + std::strerror(error) + ")");
}

// A file that is there and is not a regular one (/dev/null, /dev/full, a pipe) is written in
// place: renaming over it would replace the device.
bool special_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  return !ec && fs::exists(status) && !fs::is_regular_file(status);
}

fs::path folder_of(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path();
  return folder.empty() ? fs::path(".") : folder;
}

// Writes all of `text` to `fd`, which stays open: 0, or the error.
int write_text(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += size_t(n);
  }
  return 0;
}

// Writes all of `text` to an open descriptor and closes it; the error number, or 0.
int write_all(int fd, const std::string& text) {
  const int error = write_text(fd, text);
  if (error != 0) {
    ::close(fd);
    return error;
  }
  return ::close(fd) == 0 ? 0 : errno;
}

// A new temporary file beside `path` (or in the temporary folder for a special file).
std::string temporary_beside(const std::string& path) {
  const fs::path folder = special_file(path) ? fs::temp_directory_path() : folder_of(path);
  std::string name = (folder / ("." + fs::path(path).filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) cannot_write(path, errno);
  const mode_t mask = ::umask(0);  // mkstemp makes 0600; an output gets what the umask allows
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return name;
}

// Puts the finished temporary file in place of `path`.
void replace(const std::string& temporary, const std::string& path) {
  int error = 0;
  if (special_file(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    error = fd < 0 ? errno : write_all(fd, read_all(temporary));
    ::unlink(temporary.c_str());
  } else if (::rename(temporary.c_str(), path.c_str()) != 0) {
    error = errno;
    ::unlink(temporary.c_str());
  }
  if (error != 0) cannot_write(path, error);
}

}  // namespace

void check_output_paths(const std::vector<OutputPath>& outputs, const std::vector<OutputPath>& inputs) {
  std::vector<std::pair<fs::path, std::string>> seen;  // canonical path, option
  for (const OutputPath& i : inputs) {
    std::error_code ec;
    if (!i.path.empty() && fs::is_regular_file(i.path, ec))
      seen.emplace_back(fs::weakly_canonical(fs::absolute(i.path, ec), ec), i.option + " reads");
  }
  for (const OutputPath& o : outputs) {
    if (o.path.empty()) continue;
    std::error_code ec;
    const std::string where = o.option + " " + o.path;
    if (fs::is_directory(o.path, ec)) throw InputError(where + ": cannot write (it is a directory)");
    const bool special = special_file(o.path);
    const fs::path folder = special ? fs::path(o.path) : folder_of(o.path);
    if (!special && !fs::is_directory(folder, ec))
      throw InputError(where + ": cannot write (no folder " + folder.string() + ")");
    if (::access(folder.c_str(), W_OK) != 0) throw InputError(where + ": cannot write (" + std::strerror(errno) + ")");
    const fs::path canonical = fs::weakly_canonical(fs::absolute(o.path, ec), ec);
    for (const auto& [other, option] : seen)
      if (other == canonical)
        throw InputError(where + ": " + option + (option.find(" reads") == std::string::npos ? " writes" : "") +
                         " the same file (give each output its own path)");
    seen.emplace_back(canonical, o.option);
  }
}

void write_output(const std::string& path, const std::string& text) {
  write_output_with(path, [&](const std::string& temporary) {
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_TRUNC);
    const int error = fd < 0 ? errno : write_all(fd, text);
    if (error != 0) {
      ::unlink(temporary.c_str());
      cannot_write(path, error);
    }
  });
}

void write_output_pieces(const std::string& path,
                         const std::function<void(const std::function<void(const std::string&)>&)>& produce) {
  write_output_with(path, [&](const std::string& temporary) {
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) cannot_write(path, errno);
    std::string buffer;
    int error = 0;
    auto flush = [&] {
      if (error == 0) error = write_text(fd, buffer);
      buffer.clear();
    };
    try {
      produce([&](const std::string& piece) {
        buffer += piece;
        if (buffer.size() >= (size_t(1) << 20)) flush();
      });
    } catch (...) {
      ::close(fd);
      throw;
    }
    flush();
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error != 0) cannot_write(path, error);
  });
}

void write_output_with(const std::string& path, const std::function<void(const std::string&)>& write_to) {
  const std::string temporary = temporary_beside(path);
  try {
    write_to(temporary);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  replace(temporary, path);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::app

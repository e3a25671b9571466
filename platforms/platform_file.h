// Platform files (YAML, docs/platforms.md) and GPU type files (platforms/gpus/<name>.yaml) into
// a PlatformConfig; `--set key=value` overrides with the same dotted keys.
//
// Typical use by the command line:
//
//   PlatformConfig p = load_platform("dgx-h100", {"nodes=4", "network.oversubscription=2"});
//
// Every error is a PlatformFileError whose what() is one line "FILE:LINE: KEY: message" (or
// "--set KEY: message" for an override); the command line prints it and exits with status 2.
// The returned config has passed PlatformConfig::validate().
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "platforms/platform_config.h"

namespace tessera::platforms {

// Bad platform input. what() is one line:
//   "FILE:LINE: KEY: message"  (a platform or GPU file; LINE is 1-based)
//   "FILE: message"            (a file that cannot be read)
//   "--set KEY: message"       (a command-line override)
class PlatformFileError : public std::invalid_argument {
 public:
  PlatformFileError(std::string file, int line, std::string key, const std::string& message);
  const std::string& file() const { return file_; }  // "--set" for an override
  int line() const { return line_; }                  // 0 when there is no line
  const std::string& key() const { return key_; }     // dotted path, "" when there is none
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  std::string key_;
  std::string message_;
};

struct PlatformInfo {
  std::string name;         // "dgx-h100": what load_platform() accepts
  std::string description;  // the file's `description:`
  std::string path;         // the file
};

// The folder shipped platforms are read from: $TESSERA_PLATFORMS when set, else the source
// tree's platforms/ folder. GPU types are in its gpus/ sub-folder (then in the source tree's).
std::string platform_directory();

// Reads one platform file, fills defaults (NVLink bandwidth from the GPU type, network link
// bandwidth from the NIC line rate) and validates it.
PlatformConfig load_platform_file(const std::string& path);

// A shipped platform by name ("dgx-h100") or a path to a file (anything with a '/' or a .yaml
// suffix, or an existing file), then the overrides in order ("key=value", the keys of
// apply_setting), then validate(). A validation error names the override when it concerns a key
// that an override set, else the file's line.
PlatformConfig load_platform(const std::string& name_or_path,
                             const std::vector<std::string>& settings = {});

// The shipped platforms, sorted by name.
std::vector<PlatformInfo> list_platforms();

// Sets one value by its dotted key, as in the file: "nodes", "gpu" (a GPU type name),
// "gpu.hbm_capacity_gib", "node.nvlink.links_per_switch" ("[5,4,4,5]"), "network.topology",
// "network.oversubscription", "network.torus_dims" ("[4,4,4]")... The value is read as YAML, so
// lists and maps are written in flow style. Values derived from another one follow it unless
// they were set apart: the NVLink bandwidth follows the GPU type's per-port rate, the network
// link bandwidth the NIC line rate. Does not validate (call config.validate() after the last
// setting). Throws PlatformFileError "--set KEY: message".
void apply_setting(PlatformConfig& config, const std::string& key, const std::string& value);
// "key=value" form of the above.
void apply_setting(PlatformConfig& config, const std::string& assignment);

// GPU types: by name from the gpus/ folder, or by path to a file.
models::GpuSpec load_gpu(const std::string& name_or_path);
std::vector<std::string> list_gpus();

}  // namespace tessera::platforms

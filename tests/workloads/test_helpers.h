// Shared helpers of the workload tests.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "workloads/workload.h"

namespace tessera::workloads::testing {

// A GPT model from hyper-parameters (no file).
inline ModelSpec gpt(int64_t layers, int64_t hidden, int64_t heads, int64_t seq, int64_t vocab) {
  ModelSpec m;
  m.name = "test-gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq_length = seq;
  m.vocab = vocab;
  return m;
}

// Megatron (Narayanan et al. 2021): FLOPs per iteration with full recompute, and without the
// recompute forward pass (model FLOPs).
inline double megatron_hardware_flops(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}
inline double megatron_model_flops(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

// A generic model of identical weightless layers: `forward_flops` per sample forward (backward
// twice that), 1 KiB of activations per layer, one token per sample.
inline ModelSpec uniform_layers(int64_t layers, double forward_flops) {
  ModelSpec m;
  m.name = "uniform";
  m.architecture = Architecture::Generic;
  GenericLayer l;
  l.name = "block";
  l.kind = GenericLayer::Kind::Custom;
  l.repeat = layers;
  l.forward_flops = forward_flops;
  l.params = 0;
  l.activation_bytes = 1024;
  m.generic_layers = {l};
  m.layers = layers;
  m.seq_length = 1;
  return m;
}

// Writes `text` to a file of that name in the temporary folder; returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// The message of the InputError f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool near_rel(double a, double b, double rel = 1e-12) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace tessera::workloads::testing

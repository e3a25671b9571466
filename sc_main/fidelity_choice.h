// `--fidelity auto`: which fidelity a run gets, and why (docs/fidelity.md, "Choosing a mode").
#pragma once

#include <cstdint>
#include <string>

#include "platforms/platform.h"
#include "workloads/program.h"

namespace tessera::app {

// Packet fidelity simulates each chunk of every transfer across every hop; on the development
// machine one chunk costs about 0.9 us of wall time end to end (GPT-3 175B, TP 8 x PP 8 on 64
// A100: 197 M chunks in 184 s). Auto keeps packet fidelity for runs of at most this many chunks
// (about half a minute) on at most kPacketFidelityGpus GPUs.
constexpr uint64_t kPacketFidelityChunks = 30'000'000;
constexpr int kPacketFidelityGpus = 64;

// The chunks packet fidelity would send in `iterations` iterations of `job`: every rank's
// collective and send bytes on the wire (an all-reduce sends about twice its buffer, the other
// collectives and a send about once) over `chunk_bytes`.
uint64_t packet_chunks(const workloads::Job& job, uint64_t chunk_bytes, uint64_t iterations);

struct FidelityChoice {
  platforms::Fidelity fidelity = platforms::Fidelity::Packet;
  std::string reason;  // one line for the summary and the report
};

// The fidelity `auto` picks for `job` on `platform`: packet where a platform has RTL blocks at
// ports (only packet fidelity has ports) or where packet fidelity is affordable, flow otherwise.
FidelityChoice choose_fidelity(const platforms::PlatformConfig& platform, const workloads::Job& job,
                               uint64_t chunk_bytes, uint64_t iterations);

}  // namespace tessera::app

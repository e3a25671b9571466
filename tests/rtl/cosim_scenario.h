// Co-simulation scenarios: a job on a platform, simulated in a forked child with the switch
// ports' grants recorded (which input, which chunk, when), so that a run with RTL arbiters can be
// held against the same run with the C++ ones grant by grant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/link/fabric_port.h"
#include "platforms/platform.h"
#include "sc_main/simulation.h"
#include "tests/support/child_process.h"
#include "tests/support/jobs.h"
#include "tlm/extensions.h"

namespace tessera::testing {

// Every chunk every switch egress port starts: port, input, time and the chunk's identity.
class GrantRecorder : public models::GrantObserver {
 public:
  void granted(const models::EgressPort& port, unsigned input, const tlm::tlm_generic_payload& gp) override {
    const protocol::FabricTransfer& t = protocol::fabric_transfer(const_cast<tlm::tlm_generic_payload&>(gp));
    grants.push_back({{"port", port.name()},
                      {"input", input},
                      {"ps", sc_core::sc_time_stamp().value()},
                      {"source", t.source},
                      {"destination", t.destination},
                      {"flow", t.flow},
                      {"step", t.step},
                      {"chunk", t.chunk},
                      {"bytes", t.bytes}});
  }
  nlohmann::json grants = nlohmann::json::array();
};

struct CosimRun {
  nlohmann::json summary;  // testing::summarize, with "grants" and "rtl"
  bool ok() const { return !summary.contains("error"); }
  std::string error() const { return summary.value("error", ""); }
};

// Simulates `job` on `platform` in a child, recording every switch port's grants.
inline CosimRun run_recorded(const platforms::PlatformConfig& platform, const workloads::Job& job,
                             app::SimulationOptions options = {}) {
  CosimRun run;
  run.summary = run_in_child([&] {
    auto* recorder = new GrantRecorder;  // lives until the child exits
    options.inspect = [recorder](platforms::Platform& p) {
      for (const auto& sw : p.switches())
        for (unsigned port = 0; port < sw->ports(); ++port) sw->egress(port).set_observer(recorder);
    };
    const app::SimulationResult r = app::simulate(platform, job, options);
    nlohmann::json j = summarize(r);
    j["grants"] = recorder->grants;
    j["wall_s"] = r.wall_s;
    nlohmann::json rtl = nlohmann::json::array();
    for (const app::RtlPortResult& p : r.rtl)
      rtl.push_back({{"port", p.port}, {"block", p.block}, {"cycles", p.cycles}, {"decisions", p.decisions},
                     {"period_s", p.period_s}});
    j["rtl"] = rtl;
    return j;
  });
  return run;
}

}  // namespace tessera::testing

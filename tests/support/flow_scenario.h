// A flow-fabric scenario without GPUs: a table of links and paths (a PathProvider), a schedule
// of transfers injected from a SystemC thread, and a recorder that is every sender's
// PacketSource and every destination's FlowSink. Used by tests/models/flow_test.cpp and the
// benchmark. Call run() once per process (SystemC elaborates once): fork per scenario.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <systemc>

#include "models/flow/flow_fabric.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"

namespace tessera::testing {

// Links by id, and a path per (source, destination) rank pair.
class TablePaths : public models::PathProvider {
 public:
  explicit TablePaths(uint32_t ranks)
      : ranks_(ranks), paths_(size_t(ranks) * ranks), shares_(size_t(ranks) * ranks) {}

  uint32_t add_link(double bandwidth, sc_core::sc_time latency = sc_core::SC_ZERO_TIME,
                    sc_core::sc_time hop_latency = sc_core::SC_ZERO_TIME) {
    models::FlowLink l;
    l.timing.bandwidth_bytes_per_s = bandwidth;
    l.timing.latency = latency;
    l.hop_latency = hop_latency;
    links_.push_back(l);
    return static_cast<uint32_t>(links_.size() - 1);
  }
  models::FlowLink& spec(uint32_t id) { return links_[id]; }
  // `shares`: the part of the bytes each link carries (empty: all of it).
  void set_path(uint32_t source, uint32_t destination, std::vector<uint32_t> links,
                std::vector<double> shares = {}) {
    paths_[size_t(source) * ranks_ + destination] = std::move(links);
    shares_[size_t(source) * ranks_ + destination] = std::move(shares);
  }

  uint32_t links() const override { return static_cast<uint32_t>(links_.size()); }
  models::FlowLink link(uint32_t id) const override { return links_[id]; }
  void path(const protocol::FabricTransfer& t, std::vector<uint32_t>& links,
            std::vector<double>& shares) const override {
    const std::vector<uint32_t>& p = paths_[size_t(t.source) * ranks_ + t.destination];
    links.assign(p.begin(), p.end());
    const std::vector<double>& s = shares_[size_t(t.source) * ranks_ + t.destination];
    shares.assign(s.begin(), s.end());
  }

 private:
  uint32_t ranks_;
  std::vector<models::FlowLink> links_;
  std::vector<std::vector<uint32_t>> paths_;
  std::vector<std::vector<double>> shares_;
};

struct Transfer {
  double start_s = 0.0;
  uint32_t source = 0, destination = 0;
  uint64_t bytes = 0;
};

// What happened to transfer i (its index in the schedule, carried in FabricTransfer::chunk).
struct Outcome {
  sc_dt::uint64 left_ps = 0;     // last byte sent
  sc_dt::uint64 arrived_ps = 0;  // delivered to the destination
  uint64_t left_order = 0, arrived_order = 0;
};

class FlowScenario : public sc_core::sc_module,
                     public models::PacketSource,
                     public models::FlowSink {
 public:
  FlowScenario(sc_core::sc_module_name name, const models::PathProvider& paths,
               std::vector<Transfer> schedule, uint32_t ranks)
      : sc_module(name), fabric("fabric", paths), schedule_(std::move(schedule)),
        outcomes_(schedule_.size()) {
    for (uint32_t r = 0; r < ranks; ++r) fabric.attach(r, *this);
    SC_HAS_PROCESS(FlowScenario);
    SC_THREAD(drive);
  }

  void packet_left(tlm::tlm_generic_payload& gp) override {
    Outcome& o = outcomes_[protocol::fabric_transfer(gp).chunk];
    o.left_ps = sc_core::sc_time_stamp().value();
    o.left_order = lefts_++;
  }
  void flow_arrived(uint32_t rank, tlm::tlm_generic_payload& gp) override {
    const protocol::FabricTransfer& t = protocol::fabric_transfer(gp);
    if (rank != t.destination) throw std::runtime_error("chunk delivered to the wrong rank");
    Outcome& o = outcomes_[t.chunk];
    o.arrived_ps = sc_core::sc_time_stamp().value();
    o.arrived_order = arrivals_++;
    bytes_delivered_ += t.bytes;
    gp.release();  // as the collective engine does
  }

  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  uint64_t bytes_delivered() const { return bytes_delivered_; }
  const protocol::PayloadPool& pool() const { return pool_; }

  models::FlowFabric fabric;

 private:
  void drive() {
    for (size_t i = 0; i < schedule_.size(); ++i) {
      const Transfer& x = schedule_[i];
      const sc_core::sc_time at(x.start_s, sc_core::SC_SEC);
      if (at > sc_core::sc_time_stamp()) wait(at - sc_core::sc_time_stamp());
      tlm::tlm_generic_payload* gp = pool_.acquire();
      protocol::FabricTransfer& t = protocol::fabric_transfer(*gp);
      t.source = x.source;
      t.destination = x.destination;
      t.bytes = x.bytes;
      t.flow = i;
      t.step = 0;
      t.chunk = static_cast<uint32_t>(i);
      fabric.inject(*gp, *this);
    }
  }

  protocol::PayloadPool pool_;
  std::vector<Transfer> schedule_;
  std::vector<Outcome> outcomes_;
  uint64_t lefts_ = 0, arrivals_ = 0, bytes_delivered_ = 0;
};

}  // namespace tessera::testing

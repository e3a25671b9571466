#include "models/gpu/compute_engine.h"

#include <algorithm>
#include <cmath>

#include "tlm/time_span.h"
#include "workloads/limits.h"

namespace tessera::models {

using sc_core::sc_time;

ComputeEngine::ComputeEngine(sc_core::sc_module_name name, const GpuSpec& spec, GpuActivity& activity,
                             bool copy_engine)
    : sc_module(name), socket("socket"), spec_(spec), activity_(activity),
      copy_engine_(copy_engine), done_("done") {
  socket.register_nb_transport_fw(this, &ComputeEngine::nb_transport_fw);
  protocol::spawn_method("retire", &done_, [this] { kernel_done(); });
}

std::string ComputeEngine::describe(const protocol::ComputeEvent& k) const {
  const std::string op = k.name != nullptr ? "'" + *k.name + "'" : std::to_string(k.op);
  return std::string(name()) + ": op " + op + " (" + limits::shown(k.flops) + " FLOPs, " +
         limits::shown(k.bytes) + " bytes)";
}

double roofline_seconds(const GpuSpec& spec, const protocol::ComputeEvent& k, bool copy_engine) {
  const HbmMemory hbm(0, spec.hbm_bandwidth_gbps * 1e9, spec.hbm_efficiency);
  double seconds;
  if (copy_engine || k.memory_copy) {
    seconds = hbm.transfer_seconds(2.0 * k.bytes);  // read and write
  } else {
    const double peak = spec.peak_tflops[k.dtype] * 1e12 * spec.compute_efficiency;
    seconds = std::max(k.flops / peak, hbm.transfer_seconds(k.bytes));
  }
  return seconds + spec.kernel_overhead_us * 1e-6;
}

sc_time ComputeEngine::kernel_time(const protocol::ComputeEvent& k) const {
  return protocol::delay_after_now(roofline_seconds(spec_, k, copy_engine_), [&] { return describe(k); });
}

tlm::tlm_sync_enum ComputeEngine::nb_transport_fw(tlm::tlm_generic_payload& gp,
                                                  tlm::tlm_phase& phase, sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;  // END_RESP
  queue_.push(&gp);
  if (running_ == nullptr) start_next();
  phase = tlm::END_REQ;
  delay = sc_core::SC_ZERO_TIME;
  return tlm::TLM_UPDATED;
}

void ComputeEngine::start_next() {
  if (queue_.empty()) return;
  running_ = queue_.pop();
  started_ = progress_at_ = sc_core::sc_time_stamp();
  const protocol::ComputeEvent& kernel = protocol::compute_event(*running_);
  if (!copy_engine_) activity_.compute_begin(compute_cause(static_cast<workloads::ComputePhase>(kernel.phase)));
  sc_time full;
  host_share_ = 0;
  if (timer_ != nullptr && !copy_engine_ && !kernel.memory_copy) {
    // The compute model once per kernel: its time and the host's part of it.
    const KernelTime t = timer_->kernel_time(kernel);
    host_share_ = t.total() > 0 ? t.host_s / t.total() : 0;
    full = protocol::delay_after_now(t.total(), [&] { return describe(kernel); });
  } else {
    full = kernel_time(kernel);
  }
  if (share_ >= 1.0) {
    remaining_ = full.to_seconds();
    done_.notify(full);
    return;
  }
  remaining_ = full.to_seconds();
  done_.notify(protocol::delay_after_now(remaining_ / share_, [&] { return describe(kernel); }));
}

void ComputeEngine::set_sm_share(double share) {
  if (copy_engine_) return;
  share = std::clamp(share, 1e-3, 1.0);
  if (share == share_) return;
  if (running_ != nullptr) {
    const sc_time now = sc_core::sc_time_stamp();
    remaining_ = std::max(0.0, remaining_ - (now - progress_at_).to_seconds() * share_);
    progress_at_ = now;
    done_.cancel();
    done_.notify(protocol::delay_after_now(remaining_ / share, [&] { return describe(protocol::compute_event(*running_)); }));
  }
  share_ = share;
}

void ComputeEngine::adopt(const ComputeEngine& from,
                          const std::function<tlm::tlm_generic_payload*(uint32_t op)>& payload) {
  if (from.running_ != nullptr) {
    const protocol::ComputeEvent& kernel = protocol::compute_event(*from.running_);
    tlm::tlm_generic_payload* mine = payload(uint32_t(from.running_->get_address()));
    if (mine == nullptr && !copy_engine_) {
      activity_.compute_end(compute_cause(static_cast<workloads::ComputePhase>(kernel.phase)));  // begun on `from`
    } else if (mine != nullptr) {
      const sc_time now = sc_core::sc_time_stamp();
      running_ = mine;
      started_ = from.started_;
      host_share_ = from.host_share_;
      remaining_ = std::max(0.0, from.remaining_ - (now - from.progress_at_).to_seconds() * from.share_);
      progress_at_ = now;
      done_.notify(protocol::delay_after_now(remaining_ / share_, [&] { return describe(kernel); }));
    }
  }
  for (size_t i = 0; i < from.queue_.size(); ++i)
    if (tlm::tlm_generic_payload* mine = payload(uint32_t(from.queue_[i]->get_address()))) queue_.push(mine);
  if (running_ == nullptr) start_next();
}

void ComputeEngine::kernel_done() {
  tlm::tlm_generic_payload* gp = running_;
  running_ = nullptr;
  if (!copy_engine_) {
    activity_.compute_end(compute_cause(static_cast<workloads::ComputePhase>(protocol::compute_event(*gp).phase)));
    const double elapsed = (sc_core::sc_time_stamp() - started_).to_seconds();
    activity_.kernel_finished(protocol::compute_event(*gp).kind, elapsed * (1 - host_share_),
                              elapsed * host_share_);
  }
  activity_.span(protocol::compute_event(*gp).op, started_, sc_core::sc_time_stamp());
  start_next();
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_bw(*gp, phase, delay);  // the command processor completes the op
}

}  // namespace tessera::models

// The GPU's compute engine: runs kernels one at a time in arrival order. A kernel's time comes
// from the KernelTimer the GPU was given (the calibrated compute model of calibration/), else
// from the roofline  max(flops / (peak * efficiency), bytes / (HBM bandwidth * efficiency))  plus
// the kernel overhead. A copy engine is the same module in memory-copy mode (bytes read and written).
#pragma once

#include <functional>

#include <systemc>

#include "models/gpu/activity.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel_timer.h"
#include "models/link/ring_queue.h"
#include "models/memory/hbm.h"
#include "tlm/extensions.h"
#include "tlm/sockets.h"

namespace tessera::models {

// The roofline time of a kernel (a copy: its bytes read and written at HBM speed) on an idle
// GPU of `spec`, seconds, with the kernel overhead.
double roofline_seconds(const GpuSpec& spec, const protocol::ComputeEvent& kernel, bool copy_engine);

class ComputeEngine : public sc_core::sc_module {
 public:
  protocol::TargetSocket<ComputeEngine> socket;

  ComputeEngine(sc_core::sc_module_name name, const GpuSpec& spec, GpuActivity& activity, bool copy_engine);

  // Time one kernel (or copy) takes on an otherwise idle engine by the roofline (kernels of a GPU
  // with a KernelTimer are timed by the timer instead).
  sc_core::sc_time kernel_time(const protocol::ComputeEvent& kernel) const;
  // "platform.node0.gpu0.compute: the kernel of op 3 (...)", for an error about it.
  std::string describe(const protocol::ComputeEvent& kernel) const;

  // The share of the GPU's SMs kernels may use (collective kernels hold the rest). A running
  // kernel's remaining work is re-timed at the new rate; the copy engine uses no SMs.
  void set_sm_share(double share);
  // The compute model to time kernels with (null: the roofline). Not owned.
  void set_kernel_timer(const KernelTimer* timer) { timer_ = timer; }
  double sm_share() const { return share_; }
  // Parting (CommandProcessor::part): this engine, idle, takes over the kernels `from` runs and
  // queues, each with a transaction `payload` makes for its op (null: not issued here, left
  // out); the running one keeps its start and the work it has left.
  void adopt(const ComputeEngine& from, const std::function<tlm::tlm_generic_payload*(uint32_t op)>& payload);

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void start_next();
  void kernel_done();

  const GpuSpec& spec_;
  GpuActivity& activity_;
  bool copy_engine_;
  RingQueue<tlm::tlm_generic_payload*> queue_;
  tlm::tlm_generic_payload* running_ = nullptr;
  sc_core::sc_time started_;
  const KernelTimer* timer_ = nullptr;
  double host_share_ = 0;          // of the running op's time, the part the host adds
  double share_ = 1.0;
  double remaining_ = 0;           // seconds of work left at full speed (running kernel)
  sc_core::sc_time progress_at_;   // when remaining_ was last brought up to date
  sc_core::sc_event done_;
};

}  // namespace tessera::models

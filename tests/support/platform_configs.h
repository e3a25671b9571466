// Small platforms built in code for topology and fabric tests.
#pragma once

#include "platforms/platform_config.h"
#include "platforms/platform_file.h"

namespace tessera::testing {

// Nodes of one GPU and one NIC (no NVLink, one PCIe switch) on a generated network, DGX H100
// links otherwise: the network's endpoints are the NICs.
inline platforms::PlatformConfig single_gpu_nodes(int nodes, platforms::Topology topology, int radix,
                                                  double oversubscription, int tiers) {
  platforms::PlatformConfig c = platforms::load_platform("dgx-h100");
  c.nodes = nodes;
  c.node.gpus = 1;
  c.node.nvlink.switches = 0;
  c.node.nvlink.links_per_switch.clear();
  c.node.nvlink.in_switch_reduction = false;
  c.node.pcie.switches = 1;
  c.node.nics.count = 1;
  c.network.topology = topology;
  c.network.radix = radix;
  c.network.oversubscription = oversubscription;
  c.network.tiers = tiers;
  // The fabric's closed-form bounds: an all-to-all in the engine's chunks, not in NCCL's
  // point-to-point plan (whose channels' rate is an NVLink write, Tuner::runs_p2p).
  c.gpu.p2p_channel_gbps = 0;
  c.validate();
  return c;
}

}  // namespace tessera::testing

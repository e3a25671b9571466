// Rail images (docs/fidelity.md, "Rail images"): followers whose calls across the network
// another GPU of their node stands for. On a node whose GPUs leave it by their own gateways
// (a DGX's GPUs each by its own NIC, on its own rail), a
// follower at place t and the GPU at place s that leaves the node as it does, d = t - s places
// and gateways on (Routing::leaves_as), make the same calls across the network at the same
// times: the same program, their data-parallel groups and pipeline peers the same GPUs of the
// same nodes, d places on. Each transfer of the one is then the other's, d GPUs on at both
// ends, on links of its own; the follower leaves those calls out and the flow fabric counts
// the images (FlowFabric::image), which checks as they go that no flow shares what they cross.
#pragma once

#include <vector>

#include "models/flow/flow_fabric.h"
#include "platforms/routing.h"
#include "workloads/program.h"
#include "workloads/replicas.h"

namespace tessera::app {

struct RailImages {
  std::vector<int> source;  // per rank: the GPU whose transfers between nodes stand for its own, or -1
  // Per imaged rank, per slot: a call across the network it leaves out (communicators, peers).
  std::vector<std::vector<bool>> communicators, peers;
  int imaged = 0;
};

// The followers of `replicas` that can be imaged, each with every GPU it calls across the
// network imaged too (a call's members are all imaged or none is). A place is imaged only where
// its paths to other nodes cost, link by link, what its source's do on a sample of node pairs
// (`paths`, the flow fabric's routes; a network whose rails are wired unlike, as some spines
// of a two-tier tree take more lanes from one rail's leaves than another's, has none); the flow
// fabric checks every transfer's as the run goes.
RailImages find_rail_images(const platforms::Routing& routing, const models::PathProvider& paths,
                            const workloads::Job& job, const workloads::Replicas& replicas);

}  // namespace tessera::app

// A flow-fidelity run with symmetry (docs/fidelity.md, "Symmetry"): replica groups' GPUs follow
// their representatives' communication, quiet nodes leave out their calls among their own GPUs,
// echo nodes' simulated GPUs make their rings alone, rail images' sources make their calls across
// the network for the GPUs on their node's other rails; the replay is watched as it runs, a
// follower whose calls come apart from its representative's parts from it ("Parting"), and the
// run stops (SymmetryBroken: made again without symmetry) where that cannot be done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "models/gpu/command_processor.h"
#include "platforms/platform.h"
#include "sc_main/rail_images.h"
#include "sc_main/simulation.h"
#include "workloads/replicas.h"

namespace tessera::app {

// Quiet nodes (workloads::quiet_nodes) and the links between GPUs of the node template
// (Routing::node_link_use) that their left-out calls would have crossed.
struct QuietLinks {
  workloads::QuietNodes nodes;
  std::vector<uint32_t> between_gpus;
  bool apart = false;  // the links between GPUs carry no traffic through the node's gateways
  // Calls f(link, its mirror's link) for each quiet node's link between GPUs (flow fabric ids).
  template <typename F>
  void for_each(const platforms::RoutedPaths& paths, F&& f) const {
    for (size_t node = 0; node < nodes.mirror.size(); ++node)
      if (nodes.mirror[node] >= 0)
        for (uint32_t t : between_gpus)
          f(paths.node_link_id(uint32_t(node), t), paths.node_link_id(uint32_t(nodes.mirror[node]), t));
  }
};

// Adds up, op by op, how far apart the followers' communication completed from their
// representatives' (the farthest follower of each op). A GPU's op completing s later in its own
// run would delay what follows it by at most s, so the sum bounds how far the replay is from
// the full run, to first order (rates shared on the fabric aside). At the end the sum must be
// within kSkewBudget of the simulated time; the run stops early once it passes kSkewLimit of
// the time so far (the first ops of a run may be a little apart while little time has passed).
// A call that stays apart longer than kApartWindow parts its follower (and the GPUs of a quiet
// node with it) from the representative: those GPUs run their own programs from then on, as
// every GPU does without symmetry, and add nothing to the sum.
class SymmetricRun : public models::SymmetryMonitor {
 public:
  static constexpr double kSkewBudget = 1e-3, kSkewLimit = 1e-2;
  static constexpr double kApartWindow = 10e-6;
  // Followers whose calls apart completed within this of each other part alike (part_alike):
  // the flow fabric's rates put symmetric transfers' ends a picosecond or so apart.
  static constexpr double kAlikeWithin = 1e-9;

  // Sets the replay up on `platform` (flow fidelity), before the GPUs are loaded.
  SymmetricRun(platforms::Platform& platform, const workloads::Job& job, workloads::Replicas replicas);

  void skew(int representative, int follower, uint32_t op, double seconds) override;
  void diverged(int follower, int representative, uint32_t op) override;
  void apart(int follower, sc_core::sc_time since) override;
  // A flow crossed a link left to quiet nodes' calls.
  void crossed(const std::string& link);

  // After the run: throws SymmetryBroken where the replay went too far apart, a follower left
  // its representative's steps, or the run did not finish (which the run without symmetry
  // reports, rank by rank).
  void check();
  const workloads::Replicas& replicas() const { return replicas_; }
  double skew_s() const { return total_s_; }
  int quiet_nodes() const { return quiet_.nodes.quiet; }
  int echo_nodes() const { return echo_nodes_; }
  // Followers whose calls across the network are images of another GPU's of their node.
  int rail_images() const { return images_.imaged; }
  bool imaged(size_t rank) const { return images_.source[rank] >= 0; }
  int parted() const { return parted_; }
  // Followers that came apart alike with one that parted, and replay it since (part_alike).
  int followed_parted() const;
  // The GPU whose run a follower's report repeats: the one it replays now (`rank` itself where
  // it is no follower).
  int leader(int rank) const;
  // What a GPU's collective engine did not count of its calls among its node's GPUs (those it
  // left out while it replayed in a quiet node; a follower of a quiet node: all of them), sent
  // and received: added to its own in the report.
  std::pair<uint64_t, uint64_t> left_out_bytes(size_t rank) const;
  // A follower in an echo node: its calls in the node were its representative's echoes.
  bool echoing(size_t rank) const { return echoing_[rank]; }
  // The report's links between GPUs of quiet nodes: what their mirrors carried (a parted node's:
  // what its mirror carried until it parted, and its own after).
  void mirror_quiet_links(std::vector<LinkResult>& links, size_t first) const;

 private:
  void check_skew(double share);
  void stop(const std::string& why);
  // Parts the followers whose window has ended (each with the GPUs of its node where it is
  // quiet) where that can be done exactly; the others replay on.
  void due();
  // Whether `node` is quiet now (it mirrors another).
  bool quiet_node(size_t node) const;
  // Adds `from`'s bytes, chunks and busy time to `to`'s.
  static void add(LinkResult& to, const LinkResult& from);
  void part(int follower);
  void part_quiet_node(size_t node);
  void stop_mirroring(size_t node, const std::vector<size_t>& gpus);
  bool part_echoing(size_t node);
  // Per node, where it echoes the calls among its GPUs: its GPU that makes them (its place in
  // the node), their communicators' slots and the ops echoed (the others' left out).
  struct EchoNode {
    int place = -1;
    std::vector<bool> slots;
    std::shared_ptr<const std::vector<bool>> calls;
  };
  int echo_node_calls();
  void image_rails();
  // Whether every imaged GPU in the nodes of `parting` still replays what its source replays
  // (or its source itself).
  void check_images(const std::vector<int>& parting);
  void echo_by(size_t gpu, const EchoNode& node);
  // A follower's (or a quiet node's) calls apart: what parts with it alike.
  struct Apart {
    int follower = 0;
    std::vector<uint64_t> shape;               // what it replays; GPU by GPU, which calls on which side
    std::vector<sc_core::sc_time> at;          // when each completed
    std::vector<std::pair<int, uint32_t>> call;  // on which GPU, which op
    sc_core::sc_time from(const Apart& other) const;
    void add_calls(int rank, const models::CommandProcessor& cp);
    bool alike(const Apart& other) const;
  };
  Apart apart_of(int follower) const;
  void part_alike(const std::vector<int>& followers);
  void follow_parted(int follower, int parted);
  models::Gpu& leader_gpu(int follower) const;
  struct Skew {
    int representative = 0, follower = 0;
    uint32_t op = 0;
    double seconds = 0;
  };
  std::string describe(const Skew& s) const;

  platforms::Platform& platform_;
  const workloads::Job& job_;
  workloads::Replicas replicas_;
  QuietLinks quiet_;
  std::vector<bool> echoing_;  // followers in echo nodes
  std::vector<EchoNode> echo_;  // by node
  int echo_nodes_ = 0;
  double total_s_ = 0;
  Skew last_;
  std::string broken_;
  // Followers apart, by the end of their window: a heap, the first to end on top (windows differ:
  // window()).
  std::vector<std::pair<sc_core::sc_time, int>> due_;
  sc_core::sc_time window(int follower) const;
  sc_core::sc_event wake_;
  // Quiet nodes parted: their mirror and what its links between GPUs had carried then.
  struct PartedNode {
    size_t node = 0;
    size_t mirror = 0;
    std::vector<LinkResult> mirror_then;  // by QuietLinks::between_gpus
  };
  std::vector<PartedNode> parted_nodes_;
  int parted_ = 0;
  // Per GPU of a quiet node that parted: its mirror's bytes among the node's GPUs until then
  // (sent, received), those it left out.
  std::vector<std::pair<uint64_t, uint64_t>> left_out_then_;
  RailImages images_;
  std::vector<bool> image_source_;  // by rank: its transfers stand for an imaged GPU's too
};

}  // namespace tessera::app

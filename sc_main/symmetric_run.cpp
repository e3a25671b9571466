#include "sc_main/symmetric_run.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "tlm/sockets.h"

namespace tessera::app {
namespace {

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  for (; bytes >= 1024.0 && u + 1 < std::size(units); ++u) bytes /= 1024.0;
  char text[32];
  std::snprintf(text, sizeof text, "%.4g %s", bytes, units[u]);
  return text;
}

std::string format_us(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f us", s * 1e6);
  return text;
}

// Makes the GPUs of replica groups follow their representatives.
void follow_replicas(platforms::Platform& platform, const workloads::Replicas& replicas, SymmetricRun& watch) {
  for (size_t r = 0; r < replicas.representative.size(); ++r) {
    const int rep = replicas.representative[r];
    if (rep == static_cast<int>(r)) continue;
    platform.gpu(r).command_processor().follow(platform.gpu(size_t(rep)).command_processor(), watch);
  }
}

// The node template's links between its GPUs (Routing::node_link_use), or false where a link
// carries traffic between GPUs and traffic through the node's gateways both.
bool links_between_gpus(const platforms::Platform& platform, std::vector<uint32_t>& out) {
  const std::vector<uint8_t> use = platform.routing().node_link_use();
  for (uint32_t t = 0; t < use.size(); ++t) {
    if (use[t] == (platforms::Routing::kBetweenGpus | platforms::Routing::kThroughGateways)) return false;
    if (use[t] & platforms::Routing::kBetweenGpus) out.push_back(t);
  }
  return true;
}

// Followers in quiet nodes leave out their calls among the node's GPUs, where the node's links
// between GPUs carry nothing else (flow fidelity); the fabric stops the run if a flow crosses one.
QuietLinks leave_out_quiet_calls(platforms::Platform& platform, const workloads::Job& job,
                                 const workloads::Replicas& replicas, SymmetricRun& watch) {
  QuietLinks quiet;
  models::FlowFabric* fabric = platform.flow_fabric();
  if (fabric == nullptr) return quiet;
  quiet.apart = links_between_gpus(platform, quiet.between_gpus);
  if (!quiet.apart) return quiet;
  quiet.nodes = workloads::quiet_nodes(job, replicas, int(platform.routing().topology().node.gpus));
  if (quiet.nodes.quiet == 0) return quiet;
  const platforms::RoutedPaths& paths = *platform.flow_paths();
  std::vector<bool> forbidden(fabric->links(), false);
  quiet.for_each(paths, [&forbidden](uint32_t link, uint32_t) { forbidden[link] = true; });
  fabric->forbid(std::move(forbidden), [&watch, &paths](uint32_t link) { watch.crossed(paths.name(link)); });
  std::vector<std::vector<bool>>& communicators = quiet.nodes.communicators;
  std::vector<std::vector<bool>>& peers = quiet.nodes.peers;
  for (size_t r = 0; r < communicators.size(); ++r)
    if (!communicators[r].empty() || !peers[r].empty())
      platform.gpu(r).command_processor().leave_out(std::move(communicators[r]), std::move(peers[r]));
  return quiet;
}

// Whether a ring over `ring` gives each member's transfer to the next links of its own: no
// link of the paths (every hashed choice of them) from one member to the next is on another
// member's. Then, everyone sending at once, each transfer's rate is the one it has alone.
bool rings_apart(const platforms::RoutedPaths& paths, const std::vector<int>& ring) {
  std::vector<std::pair<uint32_t, size_t>> used;  // (link, the member sending over it)
  std::vector<uint32_t> links;
  std::vector<double> shares;
  for (size_t i = 0; i < ring.size(); ++i) {
    protocol::FabricTransfer t;
    t.source = uint32_t(ring[i]);
    t.destination = uint32_t(ring[(i + 1) % ring.size()]);
    for (uint32_t chunk = 0; chunk < 64; ++chunk) {  // the paths its hash picks among
      t.chunk = chunk;
      paths.path(t, links, shares);
      for (uint32_t l : links) used.emplace_back(l, i);
    }
  }
  std::sort(used.begin(), used.end());
  for (size_t k = 1; k < used.size(); ++k)
    if (used[k].first == used[k - 1].first && used[k].second != used[k - 1].second) return false;
  return true;
}

// Whether `members` reach their NVSwitches alike for in-switch reduction: each owner's chunks
// go to the same switch from every member (every hashed choice of it), over links of the
// sender's own, and come back from it over links of the receiver's own. Then every member's
// contribution to a shard crosses what the simulated GPU's own does (FlowFabric::echo_reduced).
bool switches_alike(const platforms::RoutedPaths& paths, const std::vector<int>& members) {
  std::vector<std::pair<uint32_t, size_t>> used;  // (link, the member sending or receiving over it)
  std::vector<uint32_t> links;
  protocol::FabricTransfer t;
  t.purpose = protocol::TransferPurpose::SwitchReduce;
  for (int owner : members) {
    t.destination = uint32_t(owner);
    for (uint32_t chunk = 0; chunk < 64; ++chunk) {  // the switches its hash picks among
      t.chunk = chunk;
      uint32_t first = 0;
      for (size_t i = 0; i < members.size(); ++i) {
        t.source = uint32_t(members[i]);
        const uint32_t sw = paths.path_to_switch(t, links);
        if (i == 0) first = sw;
        if (sw != first) return false;
        for (uint32_t l : links) used.emplace_back(l, i);
        protocol::FabricTransfer back = t;
        back.destination = back.source;
        paths.path_from_switch(sw, back, links);
        for (uint32_t l : links) used.emplace_back(l, i);
      }
    }
  }
  std::sort(used.begin(), used.end());
  for (size_t k = 1; k < used.size(); ++k)
    if (used[k].first == used[k - 1].first && used[k].second != used[k - 1].second) return false;
  return true;
}

// The one ring of the slots `echoed` (their communicators' members in ring order), or null
// where they name rings of different orders (two rings at once would share the node's links
// between the members of one and of the other) or one whose members' transfers share links.
const std::vector<int>* echoed_ring(const platforms::Platform& platform, const workloads::Job& job,
                                    const workloads::Rank& rank, const std::vector<bool>& echoed) {
  const std::vector<int>* ring = nullptr;
  for (size_t slot = 0; slot < echoed.size(); ++slot) {
    if (!echoed[slot]) continue;
    const std::vector<int>& members = job.communicators[size_t(rank.communicators[slot])].ranks;
    if (ring != nullptr && members != *ring) return nullptr;
    ring = &members;
  }
  return ring != nullptr && rings_apart(*platform.flow_paths(), *ring) ? ring : nullptr;
}

// Per op of `rank`'s program, whether it is a call on the slots `echoed` that the rank can make
// for every member (CollectiveEngine::echoes: a ring or NVLS in flow fidelity, NVLS where the
// members reach their switches alike; the others' calls are made as usual, by every member). None where the slots' ring is not one the rank can echo, or
// where a call made as usual may run beside an echoed one (they are on different streams): its
// transfers would share the node's links with the echoes' images, which do not run.
std::shared_ptr<std::vector<bool>> echoed_calls(const platforms::Platform& platform, const workloads::Job& job,
                                                const workloads::Rank& rank, const std::vector<bool>& echoed) {
  if (echoed_ring(platform, job, rank, echoed) == nullptr) return nullptr;
  const models::CollectiveEngine& engine = platform.gpu(size_t(rank.rank)).collectives();
  std::map<std::tuple<int, uint64_t, int, int, int>, bool> checked;  // (slot, bytes, kind, algorithm, protocol)
  const std::vector<workloads::Op>& ops = rank.program->ops;
  auto out = std::make_shared<std::vector<bool>>(ops.size(), false);
  std::set<uint16_t> streams;  // of the calls on the slots
  bool any = false, all = true, nvls = false;
  protocol::CollectiveEvent e;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const workloads::Op& op = ops[i];
    if (op.kind != workloads::OpKind::Collective || size_t(op.slot) >= echoed.size() || !echoed[size_t(op.slot)])
      continue;
    models::fill_communication_event(e, job, rank, i, op, 0);
    const auto [it, fresh] = checked.emplace(std::make_tuple(op.slot, e.bytes, int(e.kind), int(e.algorithm), int(e.protocol)), false);
    if (fresh) {
      it->second = engine.echoes(e);
      nvls = nvls || (it->second && engine.choice(e).algorithm == models::CollectiveAlgorithm::Nvls);
    }
    (*out)[i] = it->second;
    any = any || it->second;
    all = all && it->second;
    streams.insert(op.stream);
  }
  if (nvls && !switches_alike(*platform.flow_paths(), *echoed_ring(platform, job, rank, echoed))) return nullptr;
  return any && (all || streams.size() == 1) ? out : nullptr;
}

}  // namespace

// Echo nodes (workloads::echo_nodes) whose rings among their GPUs give each member links of its
// own: the simulated GPU makes those rings alone (CollectiveEngine::echo), its followers leave
// them out. Only where the links between a node's GPUs carry nothing through its gateways
// (`quiet.apart`, found for quiet nodes). Returns the echo nodes.
int SymmetricRun::echo_node_calls() {
  if (!quiet_.apart) return 0;
  const size_t g = platform_.routing().topology().node.gpus;
  const workloads::EchoNodes nodes = workloads::echo_nodes(job_, replicas_, int(g));
  echo_.assign(nodes.simulated.size(), EchoNode{});
  int echo = 0;
  for (size_t node = 0; node < nodes.simulated.size(); ++node) {
    const int rep = nodes.simulated[node];
    if (rep < 0) continue;
    const workloads::Rank& rank = job_.ranks[size_t(rep)];
    const std::vector<bool>& slots = nodes.communicators[size_t(rep)];
    const std::shared_ptr<const std::vector<bool>> calls = echoed_calls(platform_, job_, rank, slots);
    if (!calls) continue;
    echo_[node] = EchoNode{int(size_t(rep) - node * g), slots, calls};
    echo_by(size_t(rep), echo_[node]);
    for (size_t r = node * g; r < (node + 1) * g; ++r) {
      if (int(r) == rep) continue;
      platform_.gpu(r).command_processor().leave_out_echoed(calls);
      echoing_[r] = true;
    }
    ++echo;
  }
  return echo;
}

void SymmetricRun::echo_by(size_t gpu, const EchoNode& node) {
  const workloads::Rank& rank = job_.ranks[gpu];
  for (size_t slot = 0; slot < node.slots.size(); ++slot)
    if (node.slots[slot]) platform_.gpu(gpu).collectives().echo(rank.communicators[slot]);
}

// Followers whose calls across the network another GPU of their node stands for (rail_images.h):
// they leave those calls out, and the flow fabric counts that GPU's transfers' images for them.
void SymmetricRun::image_rails() {
  models::FlowFabric* fabric = platform_.flow_fabric();
  images_.source.assign(job_.ranks.size(), -1);
  image_source_.assign(job_.ranks.size(), false);
  if (fabric == nullptr) return;
  images_ = find_rail_images(platform_.routing(), *platform_.flow_paths(), job_, replicas_);
  const platforms::RoutedPaths* paths = platform_.flow_paths();
  for (size_t f = 0; f < images_.source.size(); ++f) {
    const int source = images_.source[f];
    if (source < 0) continue;
    image_source_[size_t(source)] = true;
    platform_.gpu(f).command_processor().leave_out_also(images_.communicators[f], images_.peers[f]);
  }
  if (images_.imaged == 0) return;
  fabric->image(images_.source, platform_.routing().topology().node.gpus, [this, paths](const std::string& why, uint32_t link) {
    stop(why + (link == models::FlowFabric::kNoLink ? "" : " (" + paths->name(link) + ")") +
         ": a node's rails are not alike here");
  });
}

// (Parting changes leaders in the nodes of the followers that part, and only there.)
void SymmetricRun::check_images(const std::vector<int>& parting) {
  const size_t g = platform_.routing().topology().node.gpus;
  for (int follower : parting) {
    const size_t node = size_t(follower) / g;
    for (size_t f = node * g; f < (node + 1) * g && broken_.empty(); ++f) {
      const int source = images_.source[f];
      if (source >= 0 && leader(int(f)) != leader(source) && leader(int(f)) != source)
        stop("GPU " + std::to_string(f) + ", whose calls across the network are GPU " + std::to_string(source) +
             "'s images, no longer replays what that one does");
    }
  }
}

SymmetricRun::SymmetricRun(platforms::Platform& platform, const workloads::Job& job, workloads::Replicas replicas)
    : platform_(platform), job_(job), replicas_(std::move(replicas)), echoing_(job.ranks.size(), false) {
  follow_replicas(platform, replicas_, *this);
  quiet_ = leave_out_quiet_calls(platform, job, replicas_, *this);
  echo_nodes_ = echo_node_calls();
  image_rails();
  protocol::spawn_method("parting", &wake_, [this] { due(); });
}

void SymmetricRun::skew(int representative, int follower, uint32_t op, double seconds) {
  if (seconds <= 0 || !broken_.empty()) return;
  total_s_ += seconds;
  last_ = {representative, follower, op, seconds};
  check_skew(kSkewLimit);
}

void SymmetricRun::diverged(int follower, int representative, uint32_t op) {
  stop("GPU " + std::to_string(follower) + "'s op " + std::to_string(op) +
       " completed a call more or fewer times than GPU " + std::to_string(representative) + "'s, which it replays");
}

void SymmetricRun::crossed(const std::string& link) {
  stop("a flow crossed " + link + ", a link between the GPUs of a node whose calls among them were left out");
}

// A follower of a GPU that parted (part_alike) was put with it as alike: it parts as soon as a
// call of theirs completes more than kAlikeWithin apart.
sc_core::sc_time SymmetricRun::window(int follower) const {
  const bool nested = leader(follower) != replicas_.representative[size_t(follower)];
  return sc_core::sc_time(nested ? kAlikeWithin : kApartWindow, sc_core::SC_SEC);
}

void SymmetricRun::apart(int follower, sc_core::sc_time since) {
  const sc_core::sc_time alike(kAlikeWithin, sc_core::SC_SEC), end = since + window(follower);
  if (due_.empty() || end < due_.front().first) wake_.notify(end + alike - sc_core::sc_time_stamp());
  due_.emplace_back(end, follower);
  std::push_heap(due_.begin(), due_.end(), std::greater<>());
}

// A follower still apart at the end of its window parts; one apart since later is looked at
// again at the end of that one's window. The windows that end within kAlikeWithin of the first
// are looked at together, so that followers alike part alike (part_alike).
void SymmetricRun::due() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time alike(kAlikeWithin, sc_core::SC_SEC);
  std::vector<int> parting, later;
  while (!due_.empty() && due_.front().first <= now && broken_.empty()) {
    std::pop_heap(due_.begin(), due_.end(), std::greater<>());
    const int follower = due_.back().second;
    due_.pop_back();
    const models::CommandProcessor& cp = platform_.gpu(size_t(follower)).command_processor();
    sc_core::sc_time since;
    if (!cp.follower() || !cp.apart_since(since)) continue;
    (since + window(follower) <= now ? parting : later).push_back(follower);
  }
  for (int follower : later) {
    sc_core::sc_time since;
    platform_.gpu(size_t(follower)).command_processor().apart_since(since);
    due_.emplace_back(since + window(follower), follower);
    std::push_heap(due_.begin(), due_.end(), std::greater<>());
  }
  part_alike(parting);
  if (images_.imaged > 0) check_images(parting);
  if (!due_.empty() && broken_.empty()) wake_.notify(std::max(due_.front().first + alike, now) - now);
}

// What parts with `follower` (its quiet node, or itself): what it replays (the node's mirror, or
// its leader) and, GPU by GPU, its calls apart (CommandProcessor::apart_calls) in `shape`; when
// each completed in `at`, with its GPU and op.
SymmetricRun::Apart SymmetricRun::apart_of(int follower) const {
  const size_t g = platform_.routing().topology().node.gpus, node = size_t(follower) / g;
  const bool quiet = quiet_node(node);
  Apart a;
  a.follower = follower;
  a.shape.push_back(quiet ? 0 : 1);
  a.shape.push_back(quiet ? uint64_t(quiet_.nodes.mirror[node])
                          : uint64_t(platform_.gpu(size_t(follower)).command_processor().leader()->rank()));
  const size_t first = quiet ? node * g : size_t(follower), last = quiet ? (node + 1) * g : first + 1;
  for (size_t r = first; r < last; ++r) {
    const models::CommandProcessor& cp = platform_.gpu(r).command_processor();
    a.shape.push_back(cp.follower() ? 1 : 0);
    if (!cp.follower()) continue;
    a.shape.push_back(uint64_t(cp.leader()->rank()) - (quiet ? uint64_t(quiet_.nodes.mirror[node]) * g : 0));
    a.add_calls(int(r), cp);
  }
  return a;
}

// Appends GPU `rank`'s calls apart: which, on which side, in `shape`; when each completed, in `at`.
void SymmetricRun::Apart::add_calls(int rank, const models::CommandProcessor& cp) {
  for (const auto& [op, leader, when] : cp.apart_calls()) {
    shape.push_back(uint64_t(op) << 1 | uint64_t(leader));
    at.push_back(when);
    call.emplace_back(rank, op);
  }
}

// The same shape, and its calls completed within kAlikeWithin of the other's.
bool SymmetricRun::Apart::alike(const Apart& other) const {
  return shape == other.shape && from(other) <= sc_core::sc_time(kAlikeWithin, sc_core::SC_SEC);
}

// How far apart the calls of two followers (or nodes) of the same shape completed.
sc_core::sc_time SymmetricRun::Apart::from(const Apart& other) const {
  sc_core::sc_time far = sc_core::SC_ZERO_TIME;
  for (size_t i = 0; i < at.size(); ++i) far = std::max(far, at[i] > other.at[i] ? at[i] - other.at[i] : other.at[i] - at[i]);
  return far;
}

// Followers (or quiet nodes) of one GPU (one node) whose calls came apart alike, within
// kAlikeWithin of each other, stand where their own runs would put them alike so far: the first
// parts, the others replay it from now on (quiet nodes mirror its node), and part from it in turn
// where they come apart from it (nested parting). How far apart their calls had completed is
// added to the skew, as a follower's within its window is.
void SymmetricRun::part_alike(const std::vector<int>& followers) {
  const size_t g = platform_.routing().topology().node.gpus;
  std::vector<std::vector<Apart>> groups;
  std::set<size_t> nodes_seen;
  for (int f : followers) {
    const size_t node = size_t(f) / g;
    const bool quiet = quiet_node(node);
    if (!platform_.gpu(size_t(f)).command_processor().follower()) continue;
    if (quiet && !nodes_seen.insert(node).second) continue;
    Apart a = apart_of(f);
    const auto alike = std::find_if(groups.begin(), groups.end(),
                                    [&a](const std::vector<Apart>& group) { return a.alike(group.front()); });
    if (alike != groups.end()) alike->push_back(std::move(a));
    else groups.push_back({std::move(a)});
  }
  for (const std::vector<Apart>& group : groups) {
    const Apart& first = group.front();
    part(first.follower);
    if (platform_.gpu(size_t(first.follower)).command_processor().follower()) continue;  // it could not part
    for (size_t u = 1; u < group.size(); ++u) {
      for (size_t i = 0; i < first.at.size(); ++i) {
        const sc_core::sc_time at = group[u].at[i], then = first.at[i];
        if (at != then) skew(first.call[i].first, group[u].call[i].first, first.call[i].second,
                             (at > then ? at - then : then - at).to_seconds());
      }
      follow_parted(group[u].follower, first.follower);
    }
  }
}

// `follower` (with its quiet node) replays `parted` (with its node) from now on.
void SymmetricRun::follow_parted(int follower, int parted) {
  const size_t g = platform_.routing().topology().node.gpus, node = size_t(follower) / g;
  const bool quiet = quiet_node(node);
  if (!quiet) {
    models::CommandProcessor& to = platform_.gpu(size_t(parted)).command_processor();
    platform_.gpu(size_t(follower)).command_processor().follow_parted(to);
    return;
  }
  const size_t to_node = size_t(parted) / g;
  for (size_t i = 0; i < g; ++i) {
    models::CommandProcessor& cp = platform_.gpu(node * g + i).command_processor();
    if (!cp.follower()) continue;
    size_t to = to_node * g + i;
    const models::CommandProcessor& there = platform_.gpu(to).command_processor();
    if (there.follower()) to = size_t(there.leader()->rank());  // a node that parted echoing (part_echoing)
    cp.follow_parted(platform_.gpu(to).command_processor());
  }
  quiet_.nodes.mirror[node] = int(to_node);
}

// Where it cannot part exactly, it keeps replaying, and the skew check above decides: in an echo
// node (its representative makes its rings for it), in a node that quiet nodes mirror (they
// would have come apart with it, unseen), or where what followed a call apart has completed on
// the representative already.
void SymmetricRun::part(int follower) {
  const size_t node = size_t(follower) / platform_.routing().topology().node.gpus;
  models::Gpu& gpu = platform_.gpu(size_t(follower));
  if (!gpu.command_processor().follower()) return;  // parted with its node already
  if (quiet_node(node)) {
    part_quiet_node(node);
    return;
  }
  const bool mirrored =
      std::find(quiet_.nodes.mirror.begin(), quiet_.nodes.mirror.end(), int(node)) != quiet_.nodes.mirror.end();
  if (echoing_[size_t(follower)] || mirrored || imaged(size_t(follower)) || image_source_[size_t(follower)]) return;
  if (gpu.part(leader_gpu(follower))) ++parted_;
}

// Every GPU of a quiet node parts at once: the calls among them, left out so far, are theirs
// from now on. A call among them that waits, on one of them, for a call apart, and that the
// representative made for the others, each of those makes itself, so that it waits for that one.
// Where the node mirrors an echo node and its GPUs came apart alike, one parts and echoes the
// calls among them, the others replay it (part_echoing).
void SymmetricRun::part_quiet_node(size_t node) {
  if (part_echoing(node)) return;
  const size_t g = platform_.routing().topology().node.gpus;
  std::vector<size_t> gpus;
  for (size_t r = node * g; r < (node + 1) * g; ++r) {
    models::Gpu& gpu = platform_.gpu(r);
    if (!gpu.command_processor().follower()) continue;
    if (!gpu.command_processor().can_part() || imaged(r)) return;  // (an image's calls are not its own)
    gpus.push_back(r);
  }
  stop_mirroring(node, gpus);
  for (size_t r : gpus) platform_.gpu(r).part(leader_gpu(int(r)));
  for (size_t r : gpus)
    for (uint32_t op : platform_.gpu(r).command_processor().unissued_calls())
      for (size_t other : gpus)
        if (other != r) platform_.gpu(other).command_processor().take_over(op);
  parted_ += int(gpus.size());
}

// A quiet node that parts: what its mirror's links between GPUs carried so far (the quiet
// node's carried nothing) and its GPUs' bytes among them, kept; its links its own from now on.
void SymmetricRun::stop_mirroring(size_t node, const std::vector<size_t>& gpus) {
  models::FlowFabric& fabric = *platform_.flow_fabric();
  const platforms::RoutedPaths& paths = *platform_.flow_paths();
  PartedNode parted{node, size_t(quiet_.nodes.mirror[node]), {}};
  // A mirror that parted itself reports what its own mirror carried before that, too.
  const PartedNode* nested = nullptr;
  for (const PartedNode& p : parted_nodes_)
    if (p.node == parted.mirror) nested = &p;
  for (size_t i = 0; i < quiet_.between_gpus.size(); ++i) {
    const uint32_t t = quiet_.between_gpus[i];
    const uint32_t id = paths.node_link_id(uint32_t(parted.mirror), t);
    LinkResult lr;
    lr.bytes = fabric.bytes_carried(id);
    lr.chunks = fabric.chunks_carried(id);
    lr.busy_s = fabric.busy_time(id).to_seconds();
    if (nested != nullptr) {
      add(lr, nested->mirror_then[i]);
    }
    parted.mirror_then.push_back(lr);
    fabric.allow(paths.node_link_id(uint32_t(node), t));
  }
  parted_nodes_.push_back(std::move(parted));
  left_out_then_.resize(platform_.gpu_count());
  for (size_t r : gpus) left_out_then_[r] = left_out_bytes(r);  // (while it is quiet)
  quiet_.nodes.mirror[node] = -1;
}

// A quiet node that mirrors an echo node, whose GPUs all replay one GPU and came apart from it
// alike (the same calls, on the same side, within kAlikeWithin): the GPU at the place of the
// echo node's simulated one parts and echoes the calls among the node's GPUs, as that one does
// (CollectiveEngine::echo); the others replay it and leave those calls out. Not where a call
// among them that is not echoed is in flight: the GPUs that replay it now never issued it.
bool SymmetricRun::part_echoing(size_t node) {
  const int mirror = quiet_.nodes.mirror[node];
  if (size_t(mirror) >= echo_.size() || echo_[size_t(mirror)].place < 0) return false;
  const EchoNode echo = echo_[size_t(mirror)];
  const size_t g = platform_.routing().topology().node.gpus, first = size_t(echo.place) + node * g;
  models::CommandProcessor& cp = platform_.gpu(first).command_processor();
  if (!cp.follower() || !cp.can_part() || imaged(first)) return false;
  const models::CommandProcessor& leader = *cp.leader();
  Apart apart;
  apart.add_calls(int(first), cp);
  std::vector<size_t> gpus;
  for (size_t r = node * g; r < (node + 1) * g; ++r) {
    const models::CommandProcessor& other = platform_.gpu(r).command_processor();
    if (!other.follower() || other.leader() != &leader) return false;
    Apart its;
    its.add_calls(int(r), other);
    if (!its.alike(apart) && !imaged(r)) return false;  // (an image comes apart as its source does)
    gpus.push_back(r);
  }
  for (uint32_t op : leader.in_flight())
    if (!cp.replays(op) && !(*echo.calls)[op] && job_.ranks[first].program->ops[op].kind == workloads::OpKind::Collective)
      return false;
  stop_mirroring(node, gpus);
  echo_by(first, echo);  // (before it resumes: it may issue them at once)
  if (!platform_.gpu(first).part(leader_gpu(int(first)))) throw std::logic_error("a GPU that can part did not");
  for (size_t r : gpus) {
    if (r == first) continue;
    models::CommandProcessor& follower = platform_.gpu(r).command_processor();
    for (int communicator : follower.left_out_communicators()) platform_.gpu(r).collectives().join_late(communicator);
    follower.leave_out({}, {});
    if (imaged(r)) follower.leave_out_also(images_.communicators[r], images_.peers[r]);
    follower.leave_out_echoed(echo.calls);
    follower.follow_parted(cp);
    echoing_[r] = true;
  }
  echo_[node] = echo;
  ++parted_;
  return true;
}

bool SymmetricRun::quiet_node(size_t node) const {
  return node < quiet_.nodes.mirror.size() && quiet_.nodes.mirror[node] >= 0;
}

void SymmetricRun::add(LinkResult& to, const LinkResult& from) {
  to.bytes += from.bytes;
  to.chunks += from.chunks;
  to.busy_s += from.busy_s;
}

// Parted nodes first: a quiet node may mirror one that parted (part_alike).
void SymmetricRun::mirror_quiet_links(std::vector<LinkResult>& links, size_t first) const {
  const platforms::RoutedPaths& paths = *platform_.flow_paths();
  for (const PartedNode& p : parted_nodes_)
    for (size_t i = 0; i < quiet_.between_gpus.size(); ++i) {
      LinkResult& to = links[first + paths.node_link_id(uint32_t(p.node), quiet_.between_gpus[i])];
      add(to, p.mirror_then[i]);
    }
  quiet_.for_each(paths, [&](uint32_t to_id, uint32_t from_id) {
    LinkResult& to = links[first + to_id];
    const LinkResult& from = links[first + from_id];
    to.bytes = from.bytes;
    to.chunks = from.chunks;
    to.busy_s = from.busy_s;
  });
}

models::Gpu& SymmetricRun::leader_gpu(int follower) const {
  return platform_.gpu(size_t(platform_.gpu(size_t(follower)).command_processor().leader()->rank()));
}

std::pair<uint64_t, uint64_t> SymmetricRun::left_out_bytes(size_t rank) const {
  std::pair<uint64_t, uint64_t> then = rank < left_out_then_.size() ? left_out_then_[rank] : std::pair<uint64_t, uint64_t>{};
  const models::CommandProcessor& cp = platform_.gpu(rank).command_processor();
  const size_t node = rank / platform_.routing().topology().node.gpus;
  if (!cp.follower() || !quiet_node(node)) return then;
  // A quiet node's follower: every call of its leader among the leader's node's GPUs.
  const size_t leader = size_t(cp.leader()->rank());
  const models::CollectiveEngine& engine = platform_.gpu(leader).collectives();
  const std::pair<uint64_t, uint64_t> before = left_out_bytes(leader);
  return {engine.bytes_injected_in_node() + before.first, engine.bytes_received_in_node() + before.second};
}

int SymmetricRun::followed_parted() const {
  int n = 0;
  for (size_t r = 0; r < platform_.gpu_count(); ++r)
    n += leader(int(r)) != int(r) && leader(int(r)) != replicas_.representative[r];
  return n;
}

int SymmetricRun::leader(int follower) const {
  const models::CommandProcessor& cp = platform_.gpu(size_t(follower)).command_processor();
  return cp.follower() ? cp.leader()->rank() : follower;
}

void SymmetricRun::check() {
  check_skew(kSkewBudget);
  if (!broken_.empty()) throw SymmetryBroken(broken_);
  for (size_t r = 0; r < platform_.gpu_count(); ++r) {
    const models::CommandProcessor& cp = platform_.gpu(r).command_processor();
    if (cp.follower() ? !cp.in_step() : !cp.finished())
      throw SymmetryBroken("GPU " + std::to_string(r) + " did not finish in step with the GPUs it replays or that replay it");
  }
}

void SymmetricRun::check_skew(double share) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  if (total_s_ <= share * now) return;
  std::ostringstream text;
  text << "by " << format_us(total_s_) << " over " << format_us(now) << " simulated, more than "
       << share * 100 << "%; the last: " << describe(last_);
  stop(text.str());
}

void SymmetricRun::stop(const std::string& why) {
  if (!broken_.empty()) return;
  broken_ = why;
  if (sc_core::sc_is_running()) sc_core::sc_stop();
}

// "GPU 2560's op 4692 'pp.recv_grad' (recv, 128 MiB), 8319.970 us from GPU 2823, which replays it"
std::string SymmetricRun::describe(const Skew& s) const {
  const workloads::Op& op = job_.ranks[size_t(s.representative)].program->ops[s.op];
  std::ostringstream text;
  text << "GPU " << s.representative << "'s op " << s.op << " '" << job_.op_name(op) << "' ("
       << (op.kind == workloads::OpKind::Collective ? to_string(op.collective) : to_string(op.kind)) << ", "
       << format_bytes(double(op.message_bytes)) << "), " << format_us(s.seconds) << " from GPU " << s.follower
       << ", which replays it";
  return text.str();
}

}  // namespace tessera::app

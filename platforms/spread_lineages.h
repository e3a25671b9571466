// Lineages of a spread toward every key (the bound on links that cannot fill,
// platforms/link_bounds.cpp): what many sources' spreads have in common, spread once for all.
//
// A spread moves particles (a share of a source's bytes at a device, toward a group of keys)
// stage by stage, and where a particle goes next depends only on its device and its keys. So
// the particles of one group at one stage (a lineage) spread alike from whichever source they
// came: on a three-tier tree, every source of a pod reaches the same cores with the same shares
// toward every key outside the pod, and the rest of its spread, down into the other 63 pods,
// is the same. A lineage seen a second time is taken out of the source's spread and spread
// once, alone, at the end, for all the sources that handed it over together (weighted by what
// they can send). That is exact where the links it crosses are crossed by nothing else of the
// sources that hand it over (each such link then carries, of each source, the lineage's shares
// alone); a source whose other particles cross one of them is spread again whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::platforms {

// A share of a source's bytes at a device toward a group of keys (KeyGroups), in a spread.
struct SpreadParticle {
  uint32_t device, group;
  double share;
  uint32_t same_device;  // the next particle at the same device this stage, or none
};

class SpreadLineages {
 public:
  // Groups of fewer particles are left in the spreads: too little to share.
  static constexpr size_t kFewestParticles = 8;

  struct Lineage {
    uint32_t group = 0;
    std::vector<std::pair<uint32_t, double>> wave;  // (device, share), by device
    bool spread_alone = false;                      // `links` known
    std::vector<uint64_t> links;                    // per directed link a bit: crossed
    double senders = 0.0;                           // what the sources that handed it over can send, bytes/s
  };

  explicit SpreadLineages(size_t directed_links) : words_((directed_links + 63) / 64) {}

  // Takes out of a stage's wave (the particles' shares set to 0) every lineage seen before, in
  // this source's spread or another's, and notes it as handed over (handed()); files the others.
  void take(std::vector<SpreadParticle>& wave);
  const std::vector<uint32_t>& handed() const { return handed_; }
  void forget_handed() { handed_.clear(); }

  Lineage& operator[](uint32_t id) { return all_[id]; }
  size_t size() const { return all_.size(); }
  size_t words() const { return words_; }
  // Whether two lineages spread alone cross no link in common.
  bool apart(uint32_t a, uint32_t b);

 private:
  uint32_t find_or_file(uint32_t group, uint64_t hash, bool& seen);

  size_t words_;
  std::vector<Lineage> all_;
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  std::vector<uint32_t> handed_;
  std::map<std::pair<uint32_t, uint32_t>, bool> apart_;
  std::vector<uint32_t> order_;                    // scratch: the wave's particles by (group, device)
  std::vector<std::pair<uint32_t, double>> wave_;  // scratch: one group's
};

}  // namespace tessera::platforms

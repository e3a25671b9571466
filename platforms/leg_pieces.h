// Network legs stored in pieces, each piece once (docs/fidelity.md, "Legs in pieces"). A leg
// between pods of a three-tier tree crosses some 2,100 links (its leaf's uplinks, its pod's
// spines to every core, every core down to the other pod, that pod's spines to the leaf), and
// the legs of a 65,536-GPU job (227,584 of them) listed link by link took 14 million entries;
// but most of a leg is what other legs cross too: every leg out of a pod crosses that pod's
// spines to the cores alike, every leg into a pod the cores down to it.
//
// A list of (link, share) is cut before each link whose id hashes into the lowest sixteenth
// (content-defined cuts: where two lists cross the same run of links with the same shares,
// they are cut at the same places, wherever the run starts in each), and each piece is stored
// once, found again by the hash of its links and shares. A list is its pieces, in order.
#pragma once

#include <cstdint>
#include <vector>

#include "models/flow/flow_fabric.h"
#include "platforms/keyed_table.h"

namespace tessera::platforms {

class LegPieces {
 public:
  using Piece = models::PathProvider::Leg::Piece;
  // A stored list: its pieces at [first, first + count) of the lists' pieces, `links` in all.
  struct List {
    uint32_t first = 0, count = 0, links = 0;
  };

  // Stores links[i] with shares[i], cut into pieces.
  List store(const std::vector<uint32_t>& links, const std::vector<double>& shares);
  // The list as the flow fabric reads it; valid until the next store().
  models::PathProvider::Leg view(const List& list) const;
  // Appends the list's links and shares.
  void append(const List& list, std::vector<uint32_t>& links, std::vector<double>& shares) const;
  // Entries held: the pieces' links and the lists' pieces.
  size_t entries() const { return links_.size() + lists_.size(); }
  // What storing `count` more links could add to entries() at most.
  static size_t at_most(size_t count) { return 2 * count; }

 private:
  static constexpr uint32_t kNone = ~0u;
  // The piece of links[first, first + count) with its shares: found, or stored.
  uint32_t piece(const uint32_t* links, const double* shares, uint32_t count);

  std::vector<uint32_t> links_;  // every piece's links, one piece after the other
  std::vector<double> shares_;
  std::vector<Piece> pieces_;            // by piece id: its place in links_ and shares_
  std::vector<uint32_t> same_hash_;      // by piece id: the next piece of the same hash, or kNone
  KeyedTable<uint32_t> by_hash_;         // the first piece of each hash
  std::vector<Piece> lists_;             // every list's pieces, one list after the other
};

}  // namespace tessera::platforms

#include "platforms/leg_pieces.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::platforms {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// A piece ends before a link whose id hashes into the lowest sixteenth.
bool cut_before(uint32_t link) { return ((uint64_t(link) + 1) * kGolden) >> 60 == 0; }

uint64_t hash_of(const uint32_t* links, const double* shares, uint32_t count) {
  ContentHash h;
  for (uint32_t i = 0; i < count; ++i) h.add(uint64_t(links[i])).add(shares[i]);
  return h.value;
}

}  // namespace

uint32_t LegPieces::piece(const uint32_t* links, const double* shares, uint32_t count) {
  const uint64_t h = hash_of(links, shares, count);
  const uint32_t* first = by_hash_.find(h);
  for (uint32_t id = first ? *first : kNone; id != kNone; id = same_hash_[id]) {
    const Piece& p = pieces_[id];
    if (p.count == count && std::equal(links, links + count, links_.begin() + p.first) &&
        std::equal(shares, shares + count, shares_.begin() + p.first))
      return id;
  }
  if (pieces_.size() >= kNone) throw std::length_error("network legs: too many pieces");
  const uint32_t id = static_cast<uint32_t>(pieces_.size());
  pieces_.push_back(Piece{static_cast<uint32_t>(links_.size()), count});
  links_.insert(links_.end(), links, links + count);
  shares_.insert(shares_.end(), shares, shares + count);
  if (first) {  // after the first of its hash
    const uint32_t next = same_hash_[*first];
    same_hash_[*first] = id;
    same_hash_.push_back(next);
  } else {
    same_hash_.push_back(kNone);
    by_hash_.insert(h, id);
  }
  return id;
}

LegPieces::List LegPieces::store(const std::vector<uint32_t>& links, const std::vector<double>& shares) {
  List list{static_cast<uint32_t>(lists_.size()), 0, static_cast<uint32_t>(links.size())};
  for (size_t begin = 0; begin < links.size();) {
    size_t end = begin + 1;
    while (end < links.size() && !cut_before(links[end])) ++end;
    const uint32_t id = piece(links.data() + begin, shares.data() + begin, static_cast<uint32_t>(end - begin));
    lists_.push_back(pieces_[id]);
    begin = end;
  }
  list.count = static_cast<uint32_t>(lists_.size()) - list.first;
  return list;
}

models::PathProvider::Leg LegPieces::view(const List& list) const {
  return models::PathProvider::Leg{links_.data(), shares_.data(), lists_.data() + list.first, list.count, list.links};
}

void LegPieces::append(const List& list, std::vector<uint32_t>& links, std::vector<double>& shares) const {
  for (uint32_t p = list.first; p < list.first + list.count; ++p) {
    const Piece& piece = lists_[p];
    links.insert(links.end(), links_.begin() + piece.first, links_.begin() + piece.first + piece.count);
    shares.insert(shares.end(), shares_.begin() + piece.first, shares_.begin() + piece.first + piece.count);
  }
}

}  // namespace tessera::platforms

// The MPI ranks of `mpirun -np N tessera sweep|search`: rank 0 plans the runs and gathers the
// results, every rank (rank 0 included) runs its share in child processes. MPI is optional at
// build time (CMake's find_package(MPI)); without it a command launched by mpirun with more
// than one rank is refused with one line, and a plain launch is one rank.
#pragma once

#include <string>

namespace tessera::app {

// Messages between ranks: a tag and a text (JSON).
enum class RankMessage : int { Run = 1, Row = 2, Stop = 3 };

class RankGroup {
 public:
  // Joins the MPI job when launched by mpirun (MPI_Init), else stands alone (one rank).
  // Throws InputError when launched by mpirun with several ranks and built without MPI.
  RankGroup();
  ~RankGroup();  // MPI_Finalize
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool leader() const { return rank_ == 0; }

  void send(int to, RankMessage tag, const std::string& text) const;
  // A message waiting for this rank, if any (never blocks): true and its sender, tag and text.
  bool receive(int& from, RankMessage& tag, std::string& text) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialized_ = false;
};

// The number of ranks mpirun started, from its environment (1 when not under mpirun).
int launched_ranks();
// True when this executable was built with MPI.
bool built_with_mpi();

}  // namespace tessera::app

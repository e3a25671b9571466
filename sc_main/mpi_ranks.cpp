#include "sc_main/mpi_ranks.h"

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "sc_main/input_error.h"

#ifdef TESSERA_HAVE_MPI
// The C API only: the deprecated C++ bindings are not used.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace tessera::app {

int launched_ranks() {
  // OpenMPI, then the PMI variables MPICH and Slurm set.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 1;
}

#ifdef TESSERA_HAVE_MPI

bool built_with_mpi() { return true; }

RankGroup::RankGroup() {
  if (launched_ranks() <= 1 && std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) MPI_Init(nullptr, nullptr);
  initialized_ = !already;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

RankGroup::~RankGroup() {
  if (initialized_) MPI_Finalize();
}

void RankGroup::send(int to, RankMessage tag, const std::string& text) const {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, static_cast<int>(tag), MPI_COMM_WORLD);
}

bool RankGroup::receive(int& from, RankMessage& tag, std::string& text) const {
  if (size_ <= 1) return false;
  int waiting = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &waiting, &status);
  if (!waiting) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::vector<char> buffer(static_cast<size_t>(count));
  MPI_Recv(buffer.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  from = status.MPI_SOURCE;
  tag = static_cast<RankMessage>(status.MPI_TAG);
  text.assign(buffer.begin(), buffer.end());
  return true;
}

#else

bool built_with_mpi() { return false; }

RankGroup::RankGroup() {
  if (launched_ranks() > 1)
    throw InputError("launched by mpirun with " + std::to_string(launched_ranks()) +
                     " ranks, but this tessera was built without MPI (install libopenmpi-dev and "
                     "rebuild, or run without mpirun: -j N runs N at once on one machine)");
}

RankGroup::~RankGroup() = default;

void RankGroup::send(int, RankMessage, const std::string&) const {
  throw std::logic_error("no MPI: a single rank sends no messages");
}

bool RankGroup::receive(int&, RankMessage&, std::string&) const { return false; }

#endif

}  // namespace tessera::app

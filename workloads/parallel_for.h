// Runs independent pieces of work on the machine's cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::workloads {

// Calls work(i) for every i in [0, count), on up to `threads` threads (0: one per core), each
// taking the next i when it is free. The calls must not touch each other's data. Where calls
// throw, the exception of the lowest i is rethrown once all are done: the same one as running
// them in order would give.
template <typename Work>
void parallel_for(int count, Work work, int threads = 0) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, count);
  if (threads <= 1) {
    for (int i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr error;
  int error_at = count;
  std::mutex error_mutex;
  auto worker = [&] {
    for (int i; (i = next++) < count;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_at) {
          error = std::current_exception();
          error_at = i;
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tessera::workloads

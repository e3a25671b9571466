// Large simulations on 2 MiB pages. A run of tens of thousands of GPUs holds gigabytes of
// records (engines, legs, the allocator's links) that its events touch in no order a cache can
// follow; with 4 KiB pages nearly every such touch also misses the TLB (a core's second-level
// TLB reaches 8 MiB of them). glibc's allocator asks the kernel for transparent huge pages when
// its tunable `glibc.malloc.hugetlb=1` is set (glibc 2.35 on), which it reads from
// GLIBC_TUNABLES when the process starts; where the kernel gives huge pages only to memory that
// asks for them ("madvise" in /sys/kernel/mm/transparent_hugepage/enabled, Debian's and
// Ubuntu's default), the executable runs such a command again with the tunable set.
// docs/fidelity.md, "Huge pages", has the measurements; TESSERA_HUGE_PAGES=off turns it off.
#pragma once

#include <string>

namespace tessera::app {

// The smallest platform, in GPUs, whose simulated run is worth running again on huge pages.
constexpr int kHugePagesFromGpus = 1024;

// Only the executable runs a command again: a call of run_cli from elsewhere (tests, other
// programs) never asks to. The executable calls this before run_cli.
void offer_rerun_with_huge_pages();

// Whether a process can have huge pages by asking: its allocator glibc's own (not a
// sanitizer's, not valgrind's), glibc new enough for the tunable, the kernel's mode "madvise".
bool huge_pages_on_request();

// Whether a simulated run on `gpus` GPUs should stop before it builds anything and run again
// with the tunable set: offered, large enough, TESSERA_HUGE_PAGES not "off", the tunable not
// set already, and huge pages there on request.
bool rerun_with_huge_pages(int gpus);

// Whether this process's allocator asks for huge pages: glibc's, with the tunable set, and a
// kernel that gives them ("always" or "madvise").
bool allocator_asks_for_huge_pages();

// GLIBC_TUNABLES's value with the tunable added to `current` (which may be empty).
std::string tunables_with_huge_pages(const std::string& current);

// Parts of the decision, for tests: the kernel's mode from the text of its `enabled` file,
// and whether glibc's version ("2.36") has the tunable.
bool kernel_gives_huge_pages_on_request(const std::string& enabled_file_text);
bool glibc_has_huge_page_tunable(const std::string& version);

}  // namespace tessera::app

// Self-checking SystemC testbenches of the verilated blocks, through their pins only: a clock,
// stimulus each cycle, every output checked against a reference model. Each bench elaborates in
// a forked child (SystemC elaborates once per process).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include <systemc>

#include "models/rtl/registry.h"
#include "tests/support/child_process.h"

namespace tessera {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;

const rtl::BlockInfo& block(const std::string& name) {
  for (const rtl::BlockInfo& b : rtl::blocks())
    if (b.name == name) return b;
  throw std::runtime_error("no block " + name);
}

// rr_arbiter with `inputs` of its inputs in use: random requests and credits every cycle; gnt
// must be the round-robin choice (the first requester after the last grant), one-hot, zero
// without credit; under full load every input is granted once every `inputs` grants.
class ArbiterBench : public sc_core::sc_module {
 public:
  ArbiterBench(sc_core::sc_module_name name, unsigned inputs, unsigned cycles)
      : sc_module(name), inputs_(inputs), cycles_(cycles) {
    dut_ = block("rr_arbiter").make_arbiter("dut");
    SC_HAS_PROCESS(ArbiterBench);
    SC_THREAD(run);
  }
  std::string failure;
  unsigned grants = 0;

 private:
  void fail(unsigned cycle, const std::string& what) {
    if (failure.empty()) failure = "cycle " + std::to_string(cycle) + ": " + what;
  }
  uint64_t expected(uint64_t req, bool credit) const {
    if (!credit) return 0;
    for (unsigned k = 0; k < inputs_; ++k) {
      const unsigned i = (pointer_ + k) % inputs_;
      if (req >> i & 1) return uint64_t(1) << i;
    }
    return 0;
  }
  void run() {
    std::mt19937_64 random(12345);
    dut_->set_rst_n(false);
    dut_->set_clk(true);
    wait(5, SC_NS);
    dut_->set_clk(false);
    dut_->set_rst_n(true);
    wait(5, SC_NS);
    std::vector<unsigned> per_input(inputs_, 0);
    for (unsigned c = 0; c < cycles_; ++c) {
      // First half of the run random, second half every input requesting with credit.
      const bool saturated = c >= cycles_ / 2;
      const uint64_t mask = inputs_ == 64 ? ~uint64_t(0) : (uint64_t(1) << inputs_) - 1;
      const uint64_t req = saturated ? mask : random() & mask;
      const bool credit = saturated || random() % 4 != 0;
      dut_->set_req(req);
      dut_->set_credit_ok(credit);
      wait(4, SC_NS);  // inputs settle before the edge
      const uint64_t gnt = dut_->gnt(), want = expected(req, credit);
      if (gnt != want) fail(c, "gnt " + std::to_string(gnt) + ", expected " + std::to_string(want));
      if (gnt & (gnt - 1)) fail(c, "more than one grant");
      if (gnt & ~req) fail(c, "a grant without a request");
      if (gnt != 0 && !credit) fail(c, "a grant without credit");
      if (want != 0) {
        const unsigned i = static_cast<unsigned>(__builtin_ctzll(want));
        pointer_ = (i + 1) % inputs_;
        ++grants;
        if (saturated) ++per_input[i];
      }
      dut_->set_clk(true);
      wait(5, SC_NS);
      dut_->set_clk(false);
      wait(1, SC_NS);
    }
    for (unsigned i = 1; i < inputs_; ++i)
      if (per_input[i] + 1 < per_input[0] || per_input[i] > per_input[0] + 1)
        fail(cycles_, "unfair under full load: input " + std::to_string(i) + " granted " +
                          std::to_string(per_input[i]) + " times, input 0 " + std::to_string(per_input[0]));
    sc_core::sc_stop();
  }
  unsigned inputs_, cycles_;
  unsigned pointer_ = 0;
  std::unique_ptr<rtl::ArbiterBlock> dut_;
};

nlohmann::json arbiter_bench(unsigned inputs, unsigned cycles) {
  return testing::run_in_child([&] {
    ArbiterBench bench("bench", inputs, cycles);
    sc_core::sc_start();
    return nlohmann::json{{"failure", bench.failure}, {"grants", bench.grants}};
  });
}

TEST(RrArbiterBench, EightInputs) {
  const nlohmann::json r = arbiter_bench(8, 4000);
  ASSERT_FALSE(r.contains("error")) << r["error"];
  EXPECT_EQ(r["failure"], "");
  EXPECT_GT(r["grants"].get<unsigned>(), 2000u + 1000u);
}

TEST(RrArbiterBench, FiveInputsNotAPowerOfTwo) {
  const nlohmann::json r = arbiter_bench(5, 2000);
  ASSERT_FALSE(r.contains("error")) << r["error"];
  EXPECT_EQ(r["failure"], "");
}

TEST(RrArbiterBench, AllSixtyFourInputs) {
  const nlohmann::json r = arbiter_bench(64, 2000);
  ASSERT_FALSE(r.contains("error")) << r["error"];
  EXPECT_EQ(r["failure"], "");
}

// token_bucket: chunks of random sizes request every cycle at a random fraction of line rate;
// a reference bucket says when each may leave. allow must come exactly then, wait_cycles must
// say how long, and over the run the flits allowed must follow the rate.
class BucketBench : public sc_core::sc_module {
 public:
  BucketBench(sc_core::sc_module_name name, uint32_t rate_q16, uint32_t burst, unsigned chunks)
      : sc_module(name), rate_(rate_q16), burst_(burst), chunks_(chunks) {
    dut_ = block("token_bucket").make_rate_limiter("dut");
    SC_HAS_PROCESS(BucketBench);
    SC_THREAD(run);
  }
  std::string failure;
  uint64_t flits = 0, last_cycle = 0;

 private:
  void fail(uint64_t cycle, const std::string& what) {
    if (failure.empty()) failure = "cycle " + std::to_string(cycle) + ": " + what;
  }
  uint64_t level(uint64_t cycle) const {
    const uint64_t cap = uint64_t(burst_) << 16, gained = (cycle - last_) * rate_;
    return std::min(cap, tokens_ + gained);
  }
  void edge(uint64_t cycle) {
    dut_->set_cycle(cycle);
    wait(4, SC_NS);
    dut_->set_clk(true);
    wait(5, SC_NS);
    dut_->set_clk(false);
    wait(1, SC_NS);
  }
  void run() {
    std::mt19937 random(7);
    dut_->set_rate(rate_);
    dut_->set_burst(burst_);
    dut_->set_cycle(0);
    dut_->set_rst_n(false);
    edge(0);
    dut_->set_rst_n(true);
    tokens_ = uint64_t(burst_) << 16;
    uint64_t cycle = 1;
    for (unsigned n = 0; n < chunks_; ++n) {
      const uint32_t size = 1 + random() % burst_;
      dut_->set_req(true);
      dut_->set_req_flits(size);
      const uint64_t need = uint64_t(size) << 16;
      while (true) {
        dut_->set_cycle(cycle);
        wait(4, SC_NS);
        const bool allow = dut_->allow(), want = level(cycle) >= need;
        if (allow != want) fail(cycle, std::string("allow ") + (allow ? "1" : "0") + ", expected " + (want ? "1" : "0"));
        if (allow) {
          if (dut_->wait_cycles() != 0) fail(cycle, "wait_cycles while allowed");
          tokens_ = level(cycle) - need;
          last_ = cycle;
          flits += size;
        } else {
          // The hint: exactly the cycles until the bucket holds the chunk.
          const uint64_t w = dut_->wait_cycles();
          if (w == 0 || level(cycle + w) < need || level(cycle + w - 1) >= need)
            fail(cycle, "wait_cycles " + std::to_string(w) + " is not the wait");
        }
        dut_->set_clk(true);
        wait(5, SC_NS);
        dut_->set_clk(false);
        wait(1, SC_NS);
        // Skip ahead as the transactor does, by the hint.
        cycle += allow ? 1 + random() % 3 : std::max<uint64_t>(1, dut_->wait_cycles());
        if (allow) break;
      }
    }
    last_cycle = cycle;
    sc_core::sc_stop();
  }
  uint32_t rate_, burst_;
  unsigned chunks_;
  uint64_t tokens_ = 0, last_ = 0;
  std::unique_ptr<rtl::RateLimiterBlock> dut_;
};

TEST(TokenBucketBench, AllowsExactlyAtTheRate) {
  const uint32_t rate = 65536 / 4;  // a quarter of line rate
  const nlohmann::json r = testing::run_in_child([&] {
    BucketBench bench("bench", rate, 64, 3000);
    sc_core::sc_start();
    return nlohmann::json{{"failure", bench.failure}, {"flits", bench.flits}, {"cycles", bench.last_cycle}};
  });
  ASSERT_FALSE(r.contains("error")) << r["error"];
  EXPECT_EQ(r["failure"], "");
  // Flits over cycles: the rate, within the bucket's worth.
  const double flits = r["flits"], cycles = r["cycles"];
  EXPECT_LE(flits, 64 + cycles / 4);
  EXPECT_GE(flits, cycles / 4 - 64);
}

}  // namespace
}  // namespace tessera

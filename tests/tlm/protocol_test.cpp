// The protocol layer: link timing arithmetic, the payload pool, extension copies, the target
// socket, the payload event queue.
#include <gtest/gtest.h>
#include <tlm_utils/peq_with_cb_and_phase.h>

#include "tlm/extensions.h"
#include "tlm/link_timing.h"
#include "tlm/payload_event_queue.h"
#include "tlm/payload_pool.h"
#include "tlm/sockets.h"
#include "tests/support/child_process.h"

namespace tessera::protocol {
namespace {

class ProtocolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_time_resolution(); }
};

TEST_F(ProtocolTest, SerializationIsWireBytesOverBandwidthRoundedUpToAPicosecond) {
  LinkTiming t;
  t.bandwidth_bytes_per_s = 450e9;
  t.packet_overhead_bytes = 16;
  t.max_packet_payload_bytes = 256;
  EXPECT_EQ(t.packets(1), 1u);
  EXPECT_EQ(t.packets(256), 1u);
  EXPECT_EQ(t.packets(257), 2u);
  EXPECT_DOUBLE_EQ(t.wire_bytes(131072), 131072.0 + 512 * 16);
  // 139264 bytes at 450 GB/s = 309.4755... ns -> 309476 ps
  EXPECT_EQ(t.serialization(131072).value(), 309476u);
  EXPECT_NEAR(t.effective_bandwidth(131072), 450e9 * 256 / 272, 1);
  LinkTiming plain;
  plain.bandwidth_bytes_per_s = 1e9;  // 1 byte per ns
  EXPECT_EQ(plain.serialization(1000).value(), 1000000u);
  EXPECT_EQ(plain.packets(123456), 1u);
}

// A DGX H100 NIC's PCIe gen5 link (63 GB/s, 24 bytes a 256-byte packet) is never busier than
// its NDR port (50 GB/s, 66 bytes a 4,096-byte packet) for a chunk of any size: checked against
// wire_bytes at every size to 64 KiB, at each packet boundary beyond, and the other way round
// it is not.
TEST_F(ProtocolTest, ALinkNeverBusierThanAnotherForAChunkOfAnySize) {
  LinkTiming pcie, ndr;
  pcie.bandwidth_bytes_per_s = 63e9;
  pcie.packet_overhead_bytes = 24;
  pcie.max_packet_payload_bytes = 256;
  ndr.bandwidth_bytes_per_s = 50e9;
  ndr.packet_overhead_bytes = 66;
  ndr.max_packet_payload_bytes = 4096;
  ASSERT_TRUE(pcie.never_busier_than(ndr));
  auto check = [&](uint64_t bytes) {
    EXPECT_LE(pcie.wire_bytes(bytes) / pcie.bandwidth_bytes_per_s, ndr.wire_bytes(bytes) / ndr.bandwidth_bytes_per_s)
        << bytes;
  };
  for (uint64_t b = 0; b <= 65536; ++b) check(b);
  for (uint64_t b = 4096; b <= (uint64_t(1) << 32); b *= 2) {
    check(b - 1);
    check(b + 1);
  }
  EXPECT_FALSE(ndr.never_busier_than(pcie));
  EXPECT_FALSE(pcie.never_busier_than(pcie));  // (the bound is not tight: equal links both fill)
  LinkTiming slow = pcie;
  slow.bandwidth_bytes_per_s = 40e9;
  EXPECT_FALSE(slow.never_busier_than(ndr));
  LinkTiming heavy = pcie;  // fast, but a small chunk's header costs it more than NDR's
  heavy.packet_overhead_bytes = 200;
  heavy.max_packet_payload_bytes = 0;
  EXPECT_FALSE(heavy.never_busier_than(ndr));
}

TEST_F(ProtocolTest, PoolReusesPayloadsWithTheirExtensions) {
  PayloadPool pool;
  tlm::tlm_generic_payload* a = pool.acquire();
  ASSERT_NE(a->get_extension<FabricTransfer>(), nullptr);
  ASSERT_NE(a->get_extension<ComputeEvent>(), nullptr);
  ASSERT_NE(a->get_extension<CollectiveEvent>(), nullptr);
  // The accessors reach the extensions TLM's table holds, without its lookup.
  EXPECT_EQ(&fabric_transfer(*a), a->get_extension<FabricTransfer>());
  EXPECT_EQ(&compute_event(*a), a->get_extension<ComputeEvent>());
  EXPECT_EQ(&collective_event(*a), a->get_extension<CollectiveEvent>());
  fabric_transfer(*a).bytes = 42;
  EXPECT_EQ(pool.in_use(), 1u);
  a->release();  // reference count 0: back to the pool
  EXPECT_EQ(pool.in_use(), 0u);
  tlm::tlm_generic_payload* b = pool.acquire();
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool.created(), 1u);
  EXPECT_EQ(b->get_extension<FabricTransfer>(), &fabric_transfer(*b));
  EXPECT_EQ(fabric_transfer(*b).bytes, 42u);  // an extension keeps its fields until set again
  tlm::tlm_generic_payload* c = pool.acquire();
  EXPECT_NE(b, c);
  EXPECT_EQ(pool.created(), 2u);
  b->release();
  c->release();
}

// A target that answers nb_transport_fw, and an initiator that calls it once at time zero.
struct Target : sc_core::sc_module {
  TargetSocket<Target> socket{"socket"};
  int calls = 0;
  explicit Target(sc_core::sc_module_name name) : sc_module(name) {
    socket.register_nb_transport_fw(this, &Target::nb_transport_fw);
  }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload&, tlm::tlm_phase& phase, sc_core::sc_time&) {
    ++calls;
    phase = tlm::END_REQ;
    return tlm::TLM_UPDATED;
  }
};
struct Initiator : sc_core::sc_module {
  InitiatorSocket<Initiator> socket{"socket"};
  tlm::tlm_sync_enum answer = tlm::TLM_ACCEPTED;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  explicit Initiator(sc_core::sc_module_name name) : sc_module(name) {
    spawn_method("send", nullptr, [this] {
      tlm::tlm_generic_payload gp;
      sc_core::sc_time t = sc_core::SC_ZERO_TIME;
      answer = socket->nb_transport_fw(gp, phase, t);
    });
  }
};
int threads_under(const std::vector<sc_core::sc_object*>& objects) {
  int n = 0;
  for (sc_core::sc_object* o : objects)
    n += (std::string(o->kind()) == "sc_thread_process") + threads_under(o->get_child_objects());
  return n;
}

TEST_F(ProtocolTest, ATargetSocketCallsItsModuleAndStartsNoThread) {
  const nlohmann::json r = testing::run_in_child([] {
    Initiator initiator("initiator");
    Target target("target");
    initiator.socket.bind(target.socket);
    sc_core::sc_start();
    return nlohmann::json{{"calls", target.calls},
                          {"updated", initiator.answer == tlm::TLM_UPDATED && initiator.phase == tlm::END_REQ},
                          {"threads", threads_under(sc_core::sc_get_top_level_objects())}};
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["calls"], 1);
  EXPECT_TRUE(r["updated"].get<bool>());
  // (A thread would carry a stack, a memory mapping of its own, per socket.)
  EXPECT_EQ(r["threads"], 0);
}

// A module that notifies its queue in a fixed pattern (timed payloads out of order, equal times,
// a chain of zero delays through even and odd delta cycles, notifications from inside the
// callback) and logs what comes out when: the same with tessera's queue as with tlm_utils'.
template <template <typename> class Queue>
struct Notifier : sc_core::sc_module {
  Queue<Notifier> queue;
  std::vector<tlm::tlm_generic_payload> gps = std::vector<tlm::tlm_generic_payload>(12);
  std::vector<std::string> log;
  explicit Notifier(sc_core::sc_module_name name) : sc_module(name), queue("queue", this, &Notifier::out) {
    using sc_core::sc_time;
    using sc_core::SC_NS;
    spawn_method("start", nullptr, [this] {
      queue.notify(gps[0], tlm::BEGIN_REQ, sc_time(30, SC_NS));
      queue.notify(gps[1], tlm::END_REQ, sc_time(10, SC_NS));
      queue.notify(gps[2], tlm::BEGIN_RESP, sc_time(30, SC_NS));
      queue.notify(gps[3], tlm::BEGIN_REQ, sc_time(10, SC_NS));
      queue.notify(gps[4], tlm::BEGIN_REQ, sc_core::SC_ZERO_TIME);
      queue.notify(gps[5], tlm::END_RESP, sc_time(20, SC_NS));
    });
  }
  void out(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase) {
    const size_t i = size_t(&gp - gps.data());
    log.push_back(std::to_string(i) + " " + phase.get_name() + " at " + sc_core::sc_time_stamp().to_string() +
                  " delta " + std::to_string(sc_core::sc_delta_count()));
    // From inside: a zero delay (the next delta cycle), and one that lands among pending ones.
    if (i == 4) queue.notify(gps[6], tlm::END_REQ, sc_core::SC_ZERO_TIME);
    if (i == 6) queue.notify(gps[7], tlm::END_REQ, sc_core::SC_ZERO_TIME);
    if (i == 1) queue.notify(gps[8], tlm::BEGIN_RESP, sc_core::sc_time(20, sc_core::SC_NS));
    if (i == 3) queue.notify(gps[9], tlm::BEGIN_RESP, sc_core::sc_time(5, sc_core::SC_NS));
    if (i == 5) queue.notify(gps[10], tlm::END_RESP, sc_core::SC_ZERO_TIME);
  }
};
template <typename Module>
using LibraryQueue = tlm_utils::peq_with_cb_and_phase<Module>;
// tessera's queue serving one module, in the library queue's shape.
template <typename Module>
struct OneModuleQueue : PayloadEventQueue<Module> {
  OneModuleQueue(const char* name, Module* owner, typename PayloadEventQueue<Module>::Callback callback)
      : PayloadEventQueue<Module>(name, callback), owner(owner) {}
  void notify(tlm::tlm_generic_payload& gp, const tlm::tlm_phase& phase, const sc_core::sc_time& delay) {
    PayloadEventQueue<Module>::notify(*owner, gp, phase, delay);
  }
  Module* owner;
};

template <template <typename> class Queue>
std::vector<std::string> notified() {
  const nlohmann::json r = testing::run_in_child([] {
    Notifier<Queue> notifier("notifier");
    sc_core::sc_start();
    return nlohmann::json{{"log", notifier.log}};
  });
  if (r.contains("error")) return {r.dump()};
  return r["log"].get<std::vector<std::string>>();
}

TEST_F(ProtocolTest, APayloadEventQueueDeliversAsTlmUtilsQueueDoes) {
  const std::vector<std::string> ours = notified<OneModuleQueue>(), theirs = notified<LibraryQueue>();
  EXPECT_EQ(ours, theirs);
  ASSERT_EQ(ours.size(), 11u);
  // Equal times in the order notified; a later notification that lands first comes first.
  EXPECT_EQ(ours[0].substr(0, 2), "4 ");
  EXPECT_EQ(ours[3].substr(0, 2), "1 ");
  EXPECT_EQ(ours[4].substr(0, 2), "3 ");
  EXPECT_EQ(ours[5].substr(0, 2), "9 ");
  EXPECT_EQ(ours[ours.size() - 2].substr(0, 2), "2 ");
  EXPECT_EQ(ours.back().substr(0, 2), "8 ");  // (notified at 10 ns for 30 ns: after those from 0)
}

// Modules sharing one queue (as a platform's collective engines do): each payload goes to the
// module it was notified for, all of them in time order, equal times in the order notified
// whichever module they are for, zero delays in the next delta cycle.
struct Listener : sc_core::sc_module {
  Listener(sc_core::sc_module_name name, std::vector<std::string>& log) : sc_module(name), log(log) {}
  void out(tlm::tlm_generic_payload&, const tlm::tlm_phase& phase) {
    log.push_back(std::string(basename()) + " " + phase.get_name() + " at " + sc_core::sc_time_stamp().to_string() +
                  " delta " + std::to_string(sc_core::sc_delta_count()));
  }
  std::vector<std::string>& log;
};

TEST_F(ProtocolTest, APayloadEventQueueSharedByModulesGivesEachItsOwnInOneOrder) {
  const nlohmann::json r = testing::run_in_child([] {
    std::vector<std::string> log;
    Listener a("a", log), b("b", log);
    PayloadEventQueue<Listener> queue("shared", &Listener::out);
    std::vector<tlm::tlm_generic_payload> gps(5);
    spawn_method("start", nullptr, [&] {
      queue.notify(a, gps[0], tlm::BEGIN_REQ, sc_core::sc_time(10, sc_core::SC_NS));
      queue.notify(b, gps[1], tlm::END_REQ, sc_core::sc_time(10, sc_core::SC_NS));
      queue.notify(a, gps[2], tlm::BEGIN_RESP, sc_core::sc_time(5, sc_core::SC_NS));
      queue.notify(b, gps[3], tlm::BEGIN_REQ, sc_core::SC_ZERO_TIME);
      queue.notify(a, gps[4], tlm::END_RESP, sc_core::SC_ZERO_TIME);
    });
    sc_core::sc_start();
    return nlohmann::json{{"log", log}};
  });
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const std::vector<std::string> expected = {"b BEGIN_REQ at 0 s delta 1", "a END_RESP at 0 s delta 1",
                                             "a BEGIN_RESP at 5 ns delta 2", "a BEGIN_REQ at 10 ns delta 3",
                                             "b END_REQ at 10 ns delta 3"};
  EXPECT_EQ(r["log"].get<std::vector<std::string>>(), expected);
}

TEST_F(ProtocolTest, ExtensionsCloneAndCopy) {
  FabricTransfer t;
  t.source = 3;
  t.destination = 5;
  t.bytes = 4096;
  t.flow = 77;
  tlm::tlm_extension_base* clone = t.clone();
  const auto& c = static_cast<const FabricTransfer&>(*clone);
  EXPECT_EQ(c.source, 3u);
  EXPECT_EQ(c.destination, 5u);
  EXPECT_EQ(c.bytes, 4096u);
  clone->free();
  FabricTransfer other;
  other.copy_from(t);
  EXPECT_EQ(other.flow, 77u);
  ComputeEvent e;
  e.flops = 1e12;
  ComputeEvent f;
  f.copy_from(e);
  EXPECT_EQ(f.flops, 1e12);
}

}  // namespace
}  // namespace tessera::protocol

// The protocol layer: link timing arithmetic, the payload pool, extension copies, the target
// socket.
#include <gtest/gtest.h>

#include "tlm/extensions.h"
#include "tlm/link_timing.h"
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

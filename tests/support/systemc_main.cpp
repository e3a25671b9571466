// Test main for binaries that link SystemC: GoogleTest runs in the parent process; scenarios
// fork (child_process.h). SystemC warnings and errors fail the scenario: they throw.
#include <cstdlib>

#include <gtest/gtest.h>
#include <systemc>

#include "tlm/sockets.h"

int sc_main(int, char*[]) { return 0; }  // libsystemc's main is not used

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  tessera::protocol::set_time_resolution();  // before any test makes an sc_time
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

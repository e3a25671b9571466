// A build without Verilator (TESSERA_RTL off or not found): no RTL block (registry.h).
namespace tessera::rtl {

extern const bool kBuiltWithVerilator = false;
void register_built_blocks() {}

}  // namespace tessera::rtl

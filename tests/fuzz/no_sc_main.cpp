// libsystemc refers to sc_main; the harnesses never start a simulation, libFuzzer's main runs.
extern "C" int sc_main(int, char*[]) { return 0; }

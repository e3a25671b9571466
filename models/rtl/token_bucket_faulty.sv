// A deliberately broken rate limiter, for the transactor's contract checks (tests,
// docs/cosim.md): token_bucket whose allow ignores the bucket, so chunks leave at the line rate.
module token_bucket_faulty (
  input  logic        clk,
  input  logic        rst_n,
  input  logic [63:0] cycle,
  input  logic [31:0] rate,
  input  logic [31:0] burst,
  input  logic        req,
  input  logic [31:0] req_flits,
  output logic        allow,
  output logic [31:0] wait_cycles
);
  logic good;
  token_bucket bucket (.clk, .rst_n, .cycle, .rate, .burst, .req, .req_flits, .allow(good), .wait_cycles);
  assign allow = req;
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused;
  assign unused = good;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule

// Deliberately broken variants of rr_arbiter, for the transactor's contract checks (tests, and
// docs/cosim.md to show what a broken block reports). FAULT selects the bug:
//   1  two grants at once: the input after the granted one is granted too when it requests
//   2  a grant with no request: the input at the pointer is granted whether it requests or not
//   3  credits ignored: grants while the downstream buffer is full
//   4  never grants: requests with credits wait forever
module rr_arbiter_faulty #(
  parameter int PORTS = 8,
  parameter int FAULT = 1
) (
  input  logic             clk,
  input  logic             rst_n,
  input  logic [PORTS-1:0] req,
  input  logic             credit_ok,
  output logic [PORTS-1:0] gnt
);
  logic [PORTS-1:0] good;
  logic [PORTS-1:0] pointer;  // one-hot: the input after the last grant

  rr_arbiter #(.PORTS(PORTS)) arbiter (
    .clk, .rst_n, .req,
    .credit_ok(FAULT == 3 ? 1'b1 : credit_ok),
    .gnt(good)
  );

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) pointer <= PORTS'(1);
    else if (good != '0) pointer <= {good[PORTS-2:0], good[PORTS-1]};
  end

  always_comb begin
    if (FAULT == 1) gnt = good | ({good[PORTS-2:0], good[PORTS-1]} & req);
    else if (FAULT == 2) gnt = (credit_ok && req != '0) ? pointer : '0;
    else if (FAULT == 4) gnt = '0;
    else gnt = good;
  end
endmodule

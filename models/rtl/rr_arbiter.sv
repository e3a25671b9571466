// tessera's RTL switch output-port arbiter (docs/cosim.md, "The arbiter"): round-robin among the
// inputs that have a chunk for this output, one grant per cycle, none while the buffer at the
// link's far end has no free slot (credit_ok low).
//
// gnt is combinational from req, credit_ok and the pointer, so a chunk is granted in the cycle
// it is requested; the pointer moves past the granted input at the rising edge. Inputs a switch
// does not have (PORTS above its port count) never request and are skipped.
module rr_arbiter #(
  parameter int PORTS = 8
) (
  input  logic             clk,
  input  logic             rst_n,      // asynchronous, active low
  input  logic [PORTS-1:0] req,        // req[i]: input i has a chunk waiting for this output
  input  logic             credit_ok,  // the downstream buffer can take a chunk
  output logic [PORTS-1:0] gnt         // one-hot: the input whose chunk leaves at this edge
);
  localparam int IW = PORTS > 1 ? $clog2(PORTS) : 1;

  logic [IW-1:0] ptr;   // the input looked at first: the one after the last grant
  logic [IW-1:0] next;  // the pointer after this cycle's grant
  int idx;

  // The first requesting input at or after ptr: scan from the far end back to ptr, the last
  // requester seen wins.
  always_comb begin
    gnt = '0;
    next = ptr;
    idx = 0;
    if (credit_ok) begin
      for (int k = PORTS - 1; k >= 0; k--) begin
        idx = (int'(ptr) + k) % PORTS;
        if (req[idx]) begin
          gnt = '0;
          gnt[idx] = 1'b1;
          next = IW'((idx + 1) % PORTS);
        end
      end
    end
  end

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) ptr <= '0;
    else if (gnt != '0) ptr <= next;
  end
endmodule

// tessera's RTL NIC rate limiter (docs/cosim.md, "The rate limiter"): a token bucket in flits.
// Tokens accrue at `rate` flits per cycle (16.16 fixed point) up to `burst` flits; a chunk of
// req_flits leaves when the bucket holds that many, which it then takes. The bucket keeps its
// level as of the cycle it last changed, and reads the port's cycle counter to catch up, so it
// needs no clock while nothing waits. wait_cycles says how many cycles until the waiting chunk
// can leave, so that the clock may stop meanwhile.
module token_bucket (
  input  logic        clk,
  input  logic        rst_n,        // synchronous, active low: the bucket starts full
  input  logic [63:0] cycle,        // the port's cycle count (it runs on while clk is gated)
  input  logic [31:0] rate,         // flits per cycle, 16.16 fixed point (1.0: line rate)
  input  logic [31:0] burst,        // bucket size, flits
  input  logic        req,          // a chunk is waiting
  input  logic [31:0] req_flits,    // its size on the wire, flits
  output logic        allow,        // it leaves at this edge
  output logic [31:0] wait_cycles   // cycles until it could leave (0 when allowed)
);
  logic [63:0] tokens;  // 16.16 flits, as of cycle `last`
  logic [63:0] last;

  logic [63:0] cap, elapsed, gained, level, need, deficit, cycles_needed;

  always_comb begin
    cap = {16'b0, burst, 16'b0};
    elapsed = cycle - last;
    // elapsed * rate fits 64 bits below 2^32 cycles; beyond, the bucket is full anyway.
    gained = elapsed[63:32] != 32'b0 ? cap : elapsed * {32'b0, rate};
    level = (gained >= cap || tokens + gained >= cap) ? cap : tokens + gained;
    need = {16'b0, req_flits, 16'b0};
    allow = req && level >= need;
    deficit = need - level;
    cycles_needed = rate == 32'b0 ? 64'hffff_ffff : (deficit + {32'b0, rate} - 64'd1) / {32'b0, rate};
    if (!req || allow) wait_cycles = 32'b0;
    else if (cycles_needed[63:32] != 32'b0) wait_cycles = 32'hffff_ffff;
    else wait_cycles = cycles_needed[31:0];
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      tokens <= {16'b0, burst, 16'b0};
      last <= cycle;
    end else if (allow) begin
      tokens <= level - need;
      last <= cycle;
    end
  end
endmodule

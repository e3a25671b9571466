#!/usr/bin/env python3
"""Measure one GPU's kernels for tessera's compute model (docs/calibration.md, "Measuring a GPU").

Runs GEMMs, memory-bound kernels (STREAM triad, copy, layer norm, softmax, residual and bias adds)
and fused attention through PyTorch on the current CUDA device, and writes

  OUT/measured.csv  rows for `tessera compute --gpu NAME --measured OUT/measured.csv`
                    (gpu,kind,dtype,m,n,k,value,unit,source)
  OUT/kernels.csv   every measurement in full: the kernels each call launched, their names
                    (cuBLAS names carry the tile), the median kernel time, and the back-to-back
                    period (kernel plus the device's gap to the next one)
  OUT/device.txt    the GPU, driver, clocks and library versions
  OUT/layer.json.gz a PyTorch profiler (Kineto) trace of a transformer layer's forward and
                    backward (`tessera calibrate --kineto` reads it)

How each call is timed: the GPU is first kept busy by a spin kernel (torch.cuda._sleep) while
the host queues REPS calls, so the calls run back to back however short they are; the
profiler's kernel records give each kernel's own time and the period between calls. No CUDA
graphs: this is how an eager training framework launches kernels.

Usage: python3 tools/measure_gpu.py --gpu H100-SXM5-80GB --out DIR [--quick]
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.nn.functional as F

REPS = 30


class Recorder:
    def __init__(self, gpu, out):
        self.gpu, self.out = gpu, out
        self.measured = open(os.path.join(out, "measured.csv"), "w")
        self.measured.write("# Measured with tools/measure_gpu.py (profiler kernel records; GEMMs: the back-to-back "
                            "period, kernel and gap; STREAM and flash attention: the kernel alone; see kernels.csv)\n")
        self.measured.write("gpu,kind,dtype,m,n,k,value,unit,source\n")
        self.kernels = open(os.path.join(out, "kernels.csv"), "w")
        self.kernels.write("kind,dtype,batch,m,n,k,bytes,flops,kernels_per_call,kernel_us,period_us,"
                           "tflops,tbps,names\n")

    def row(self, kind, dtype, batch, m, n, k, nbytes, flops, t):
        kus, pus = t["kernel_us"], t["period_us"]
        tflops = flops / (kus * 1e-6) / 1e12 if flops else 0.0
        tbps = nbytes / (kus * 1e-6) / 1e12 if nbytes else 0.0
        self.kernels.write(f"{kind},{dtype},{batch},{m},{n},{k},{nbytes},{flops},{t['per_call']:.2f},"
                           f"{kus:.3f},{pus:.3f},{tflops:.2f},{tbps:.4f},{'|'.join(t['names'])}\n")
        self.kernels.flush()
        print(f"{kind:22s} {dtype:5s} {batch}x{m}x{n}x{k}: {kus:9.2f} us (period {pus:9.2f}) "
              f"{tflops:7.1f} TFLOP/s {tbps:6.3f} TB/s {t['names'][0][:70] if t['names'] else ''}", flush=True)
        return tflops, tbps

    def measured_row(self, kind, dtype, m, n, k, value, unit, source):
        self.measured.write(f"{self.gpu},{kind},{dtype},{m},{n},{k},{value:.4g},{unit},{source}\n")
        self.measured.flush()


def kernel_records(prof):
    """The profiler's GPU kernels, in start order: (start_us, duration_us, name)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    kernels = [(float(e["ts"]), float(e["dur"]), e["name"]) for e in events
               if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    return sorted(kernels)


def time_calls(fn, reps=REPS):
    """Median kernel time per call and back-to-back period of `fn`, its kernels' names."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        torch.cuda._sleep(int(4e6))  # about 2 ms: the host queues the calls meanwhile
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    kernels = kernel_records(prof)[1:]  # the first is the spin kernel
    if not kernels or len(kernels) % reps:
        raise RuntimeError(f"{len(kernels)} kernels for {reps} calls")
    per_call = len(kernels) // reps
    calls = [kernels[i * per_call:(i + 1) * per_call] for i in range(reps)]
    kernel_us = statistics.median(sum(k[1] for k in c) for c in calls)
    starts = [c[0][0] for c in calls]
    period_us = statistics.median(b - a for a, b in zip(starts, starts[1:])) if reps > 1 else kernel_us
    names = []
    for k in calls[0]:
        if k[2] not in names:
            names.append(k[2].replace(",", ";"))
    return {"kernel_us": kernel_us, "period_us": period_us, "per_call": per_call, "names": names}


DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "tf32": torch.float32}


def gemm(rec, dtype, m, n, k, batch=1, kind="gemm", source="torch.matmul"):
    """C = A B with A m x k row-major and B k x n as nn.Linear holds it (n x k, used transposed)."""
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    t = DTYPES[dtype]
    shape_a = (batch, m, k) if batch > 1 else (m, k)
    shape_b = (batch, n, k) if batch > 1 else (n, k)
    a = torch.randn(shape_a, device="cuda", dtype=t)
    b = torch.randn(shape_b, device="cuda", dtype=t)
    bt = b.transpose(-1, -2)
    out = torch.empty((batch, m, n) if batch > 1 else (m, n), device="cuda", dtype=t)
    fn = (lambda: torch.bmm(a, bt, out=out)) if batch > 1 else (lambda: torch.mm(a, bt, out=out))
    res = time_calls(fn)
    eb = a.element_size()
    flops = 2.0 * batch * m * n * k
    rec.row(kind, dtype, batch, m, n, k, batch * (m * k + k * n + m * n) * eb, flops, res)
    if batch == 1:  # back to back, as the compute model's GEMM time (launch_us included)
        rec.measured_row(kind, dtype, m, n, k, flops / (res["period_us"] * 1e-6) / 1e12, "TFLOP/s",
                         f"{source} back-to-back period")
    del a, b, out


def gemm_fp8(rec, m, n, k):
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device="cuda")
    fn = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    res = time_calls(fn)
    rec.row("gemm", "fp8", 1, m, n, k, m * k + k * n + 2 * m * n, 2.0 * m * n * k, res)
    rec.measured_row("gemm", "fp8", m, n, k, 2.0 * m * n * k / (res["period_us"] * 1e-6) / 1e12, "TFLOP/s",
                     "torch._scaled_mm back-to-back period")


def memory_kernel(rec, kind, fn, nbytes, dtype, elements):
    try:
        res = time_calls(fn)
    except Exception as e:  # one kernel's failure leaves the others measured
        print(f"{kind} {dtype} {elements}: {e}".splitlines()[0], flush=True)
        return 0.0
    _, tbps = rec.row(kind, dtype, 1, elements, 0, 0, nbytes, 0, res)
    return tbps


def memory_kernels(rec, quick):
    n = 1 << 28  # 268 M fp32 elements, 1 GiB per array
    a = torch.empty(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.rand(n, device="cuda")
    tbps = memory_kernel(rec, "stream_triad", lambda: torch.add(b, c, alpha=3.0, out=a), 3 * 4 * n, "fp32", n)
    rec.measured_row("hbm_stream_triad", "", "", "", "", tbps, "TB/s", "torch.add(b; c; alpha; out=a) 3 x 1 GiB fp32")
    memory_kernel(rec, "stream_copy", lambda: a.copy_(b), 2 * 4 * n, "fp32", n)
    del a, b, c
    for dtype in ("fp16", "bf16"):
        t = DTYPES[dtype]
        for tokens, hidden in ((8192, 4096), (16384, 8192)) if not quick else ((8192, 4096),):
            x = torch.randn(tokens, hidden, device="cuda", dtype=t)
            y = torch.randn(tokens, hidden, device="cuda", dtype=t)
            w = torch.ones(hidden, device="cuda", dtype=t)
            eb = x.element_size()
            nel = tokens * hidden
            memory_kernel(rec, "norm", lambda: F.layer_norm(x, (hidden,), w, w), 2 * nel * eb, dtype, nel)
            memory_kernel(rec, "residual", lambda: torch.add(x, y), 3 * nel * eb, dtype, nel)
            xr = x.detach().requires_grad_(True)
            wr = w.detach().requires_grad_(True)
            yn = F.layer_norm(xr, (hidden,), wr, wr)
            memory_kernel(rec, "norm_backward",
                          lambda: torch.autograd.grad(yn, (xr, wr), y, retain_graph=True),
                          3 * nel * eb, dtype, nel)
            del x, y, xr, yn
        for rows, cols in ((8192, 1536), (8192, 12288)):
            x = torch.randn(rows, cols, device="cuda", dtype=t)
            bias = torch.randn(cols, device="cuda", dtype=t)
            memory_kernel(rec, "bias", lambda: torch.add(x, bias), 2 * rows * cols * x.element_size(), dtype,
                          rows * cols)
            del x
        for batch, s in ((32, 2048), (64, 2048)) if not quick else ((32, 2048),):
            x = torch.randn(batch, s, s, device="cuda", dtype=t)
            eb = x.element_size()
            memory_kernel(rec, "softmax", lambda: torch.softmax(x, dim=-1), 2 * batch * s * s * eb, dtype,
                          batch * s * s)
            mask = torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1)
            memory_kernel(rec, "softmax_masked", lambda: torch.softmax(x.masked_fill(mask, -1e4), dim=-1),
                          4 * batch * s * s * eb, dtype, batch * s * s)
            del x
        x = torch.randn(8192, 4 * 4096, device="cuda", dtype=t)
        memory_kernel(rec, "gelu", lambda: F.gelu(x, approximate="tanh"), 2 * x.numel() * x.element_size(), dtype,
                      x.numel())
        del x


def attention(rec):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for dtype in ("fp16", "bf16"):
        for d in (64, 128):
            b, s = 2, 8192
            heads = 2048 // d  # hidden 2048, as the Azure benchmark (batch 2, sequence 8192)
            q = torch.randn(b, heads, s, d, device="cuda", dtype=DTYPES[dtype], requires_grad=True)
            k = torch.randn_like(q, requires_grad=True)
            v = torch.randn_like(q, requires_grad=True)
            for causal in (False, True):
                flops = 4.0 * b * heads * s * s * d * (0.5 if causal else 1.0)
                for name, backend in backends:
                    try:
                        with sdpa_kernel(backend):
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            res = time_calls(fwd, 10)
                            kind = f"attention_{name}_fwd_hdim{d}{'_causal' if causal else ''}"
                            tflops, _ = rec.row(kind, dtype, b * heads, s, s, d, 4 * q.numel() * q.element_size(),
                                                flops, res)
                            if name == "flash" and d == 64 and not causal:
                                rec.measured_row("flash_attention2_hdim64", dtype, "", "", "", tflops, "TFLOP/s",
                                                 "torch SDPA flash backend fwd (batch 2 seq 8192 hidden 2048)")
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            go = torch.randn_like(o)
                            bwd = lambda: torch.autograd.grad(o, (q, k, v), go, retain_graph=True)
                            res = time_calls(bwd, 10)
                            rec.row(kind.replace("_fwd", "_bwd"), dtype, b * heads, s, s, d,
                                    8 * q.numel() * q.element_size(), 2.5 * flops, res)
                    except Exception as e:  # a backend this build or GPU lacks
                        print(f"attention {name} {dtype} d{d}: {e}".splitlines()[0], flush=True)
            del q, k, v


def transformer_shapes(quick):
    """Megatron GPT layer GEMMs (forward, data gradient, weight gradient) for tensor parallelism t."""
    shapes = []
    configs = [(8192, 4096, 1), (8192, 4096, 8), (4096, 12288, 8), (2048, 12288, 8), (4096, 8192, 8),
               (8192, 6144, 4), (4096, 5120, 2)]
    if quick:
        configs = configs[:2]
    for tokens, h, t in configs:
        for n_out, k_in in ((3 * h // t, h), (h, h // t), (4 * h // t, h), (h, 4 * h // t)):
            shapes.append((tokens, n_out, k_in))  # forward
            shapes.append((tokens, k_in, n_out))  # data gradient
            shapes.append((n_out, k_in, tokens))  # weight gradient
    return sorted(set(shapes))


def gemms(rec, quick):
    azure = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
             (16384, 16384, 16384), (1024, 2145, 1024), (6144, 12288, 12288), (802816, 192, 768)]
    for dtype in ("bf16", "fp16"):
        for m, n, k in (azure if not quick else azure[:3]):
            gemm(rec, dtype, m, n, k)
    gemm(rec, "bf16", 2048, 2048, 13312, kind="gemm_best")
    for m, n, k in ((256, 256, 256), (512, 512, 512), (1024, 4096, 1024), (128, 4096, 4096), (4096, 4096, 128),
                    (65536, 64, 64), (16384, 1024, 1024), (4096, 16384, 1024)):
        gemm(rec, "bf16", m, n, k)
    for m, n, k in transformer_shapes(quick):
        gemm(rec, "bf16", m, n, k)
    # Wave quantization: 128 x 256 tiles on 132 SMs; m steps of 128 at n = 8448 (33 tiles of 256).
    for m in range(2048, 3073 if not quick else 2305, 128):
        gemm(rec, "bf16", m, 8448, 4096)
    # Unaligned operands.
    for m, n, k in ((4096, 4095, 4096), (4096, 4096, 4095), (4095, 4096, 4096), (1024, 2145, 1024)):
        gemm(rec, "bf16", m, n, k)
    # Attention core without flash attention: batch (b a / t) products.
    for batch, s, d in ((32, 2048, 128), (64, 2048, 64), (96, 2048, 128)):
        gemm(rec, "bf16", s, s, d, batch=batch, kind="attention_gemm")
        gemm(rec, "bf16", s, d, s, batch=batch, kind="attention_gemm")
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192)):
        gemm(rec, "tf32", m, n, k)
        try:
            gemm_fp8(rec, m, n, k)
        except Exception as e:
            print(f"fp8: {e}".splitlines()[0], flush=True)
    try:
        gemm_fp8(rec, 1024, 9216, 14336)
    except Exception as e:
        print(f"fp8: {e}".splitlines()[0], flush=True)


def launch_gaps(rec):
    """Device gap between queued tiny kernels, and the host's time per eager launch."""
    x = torch.zeros(1024, device="cuda")
    res = time_calls(lambda: x.add_(1.0), 200)
    rec.row("tiny_kernel_queued", "fp32", 1, 1024, 0, 0, 8192, 0, res)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(2000):
        x.add_(1.0)
    host_us = (time.perf_counter() - start) / 2000 * 1e6
    torch.cuda.synchronize()
    rec.kernels.write(f"host_launch,fp32,1,1024,0,0,0,0,1,{host_us:.3f},{host_us:.3f},0,0,x.add_(1) eager from Python\n")
    print(f"host time per eager launch: {host_us:.2f} us", flush=True)


def layer_trace(out):
    """A GPT layer (hidden 4096, 32 heads, micro-batch 4, sequence 2048, bf16) forward and backward."""
    b, s, h, heads = 4, 2048, 4096, 32
    t = torch.bfloat16
    ln1 = torch.nn.LayerNorm(h, device="cuda", dtype=t)
    qkv = torch.nn.Linear(h, 3 * h, device="cuda", dtype=t)
    proj = torch.nn.Linear(h, h, device="cuda", dtype=t)
    ln2 = torch.nn.LayerNorm(h, device="cuda", dtype=t)
    fc1 = torch.nn.Linear(h, 4 * h, device="cuda", dtype=t)
    fc2 = torch.nn.Linear(4 * h, h, device="cuda", dtype=t)
    x = torch.randn(s, b, h, device="cuda", dtype=t, requires_grad=True)

    def step():
        y = ln1(x)
        q, k, v = qkv(y).view(s, b, heads, 3 * h // heads).permute(1, 2, 0, 3).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).permute(2, 0, 1, 3).reshape(s, b, h)
        x1 = x + proj(a)
        z = x1 + fc2(F.gelu(fc1(ln2(x1)), approximate="tanh"))
        z.backward(torch.ones_like(z))

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        step()
    end.record()
    torch.cuda.synchronize()
    print(f"layer forward and backward: {start.elapsed_time(end) / 10:.3f} ms per step (mean of 10)", flush=True)
    with open(os.path.join(out, "device.txt"), "a") as f:
        f.write(f"GPT layer (hidden {h}, {heads} heads, micro-batch {b}, sequence {s}, bf16) forward and backward: "
                f"{start.elapsed_time(end) / 10:.3f} ms per step, mean of 10 after 3 warm-ups\n")
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    path = os.path.join(out, "layer.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
        g.write(f.read())
    os.unlink(path)
    print("layer trace written", flush=True)


def describe_device(out):
    p = torch.cuda.get_device_properties(0)
    lines = [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"device: {p.name}, {p.multi_processor_count} SMs, "
             f"{p.total_memory / 2**30:.1f} GiB", f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
             f"cuDNN {torch.backends.cudnn.version()}", f"python {sys.version.split()[0]}"]
    try:
        smi = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE"], capture_output=True, text=True,
                             timeout=30).stdout
        lines.append(smi)
    except Exception as e:
        lines.append(f"nvidia-smi: {e}")
    with open(os.path.join(out, "device.txt"), "a") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", required=True, help="the tessera GPU type name written in measured.csv")
    parser.add_argument("--out", required=True, help="the folder to write into")
    parser.add_argument("--quick", action="store_true", help="fewer GEMM and memory-bound shapes")
    parser.add_argument("--sections", default="launch,memory,gemm,attention,layer")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("measure_gpu.py: no CUDA device")
    os.makedirs(args.out, exist_ok=True)
    describe_device(args.out)
    rec = Recorder(args.gpu, args.out)
    sections = {"launch": lambda: launch_gaps(rec), "memory": lambda: memory_kernels(rec, args.quick),
                "gemm": lambda: gemms(rec, args.quick), "attention": lambda: attention(rec),
                "layer": lambda: layer_trace(args.out)}
    for name in args.sections.split(","):
        start = time.time()
        try:
            sections[name]()
        except Exception:
            traceback.print_exc()
        torch.cuda.empty_cache()
        print(f"section {name}: {time.time() - start:.1f} s", flush=True)
    describe_device(args.out)


if __name__ == "__main__":
    main()

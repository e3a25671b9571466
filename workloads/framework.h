// The training framework that runs the model: which kernels it fuses, the per-iteration work it
// adds, how fast its host launches kernels. A measurement is of a model *and* the software that
// ran it; `--framework NAME|FILE` names that software (workloads/frameworks/*.yaml), so the
// compiler emits the kernels that software launches (docs/compute-model.md).
#pragma once

#include <string>
#include <vector>


namespace tessera::workloads {

struct Strategy;

struct Framework {
  std::string name = "megatron-core";
  std::string file;
  // Fusions (Megatron-LM's fused kernels; each false launches the unfused PyTorch kernels).
  bool fused_bias_activation = true;   // bias + GeLU/SwiGLU in one kernel (bias_gelu_impl)
  bool fused_bias_dropout_add = true;  // bias + dropout + residual add in one kernel
  bool fused_softmax = true;           // scale + mask + softmax in one kernel
  bool fused_grad_accumulation = true; // weight-gradient GEMMs accumulate into the main gradient
  // A linear layer's own bias (QKV's): added in the GEMM (cuBLASLt's epilogue, or addmm's C
  // operand); false: a bias-add kernel after the forward GEMM.
  bool fused_gemm_bias = true;
  // Its gradient summed in the weight-gradient GEMM's epilogue (Transformer Engine); false: a
  // reduction kernel (the output gradient summed over the tokens). Biases applied in a fused
  // bias-activation or bias-dropout-add get their gradient from a reduction kernel in every
  // framework (autograd sums the broadcast bias).
  bool fused_gemm_bias_grad = true;
  // Passes of a layer norm's backward over its output gradient and input: 1 (dX and the weight
  // gradients' partial sums in one kernel, Transformer Engine); 2 (Apex's fused layer norm and
  // PyTorch's own: one kernel for the weight gradients' partial sums, another for dX, so both
  // tensors are read twice).
  int norm_backward_passes = 1;
  // Per-iteration work.
  bool gradient_clipping = true;       // the gradient norm: every gradient read once
  bool loss_scaling = true;            // fp16: gradients checked for inf/NaN and unscaled
  double host_launch_us = 10.0;        // host time per kernel launch
  // Strategy defaults of this software (a flag or a strategy file still wins).
  bool overlap_grad_reduce = true;
  bool flash_attention = true;         // has a fused (flash) attention kernel
  // Pipeline transfers.
  bool synchronous_p2p = false;        // kernels wait for every send and receive to finish
  bool p2p_scatter_gather = false;     // TP ranks send 1/t of a boundary tensor, then all-gather
  // Fully sharded parameters (--zero 3), as this software runs them (docs/workloads.md,
  // "Sharded data parallelism"):
  // - zero3_fetch: "unit", one all-gather of a unit's (layer's) parameters (FSDP's flat
  //   parameter per wrapped block); "tensor", one all-gather per weight tensor (DeepSpeed's
  //   per-parameter fetch), tensors below zero3_persistence_threshold elements never sharded;
  // - zero3_prefetch_elements, zero3_prefetch_units: parameters and units gathered ahead of
  //   their use (-1: no limit); a unit whose gather would pass a limit waits for the compute
  //   before it;
  // - zero3_regather_for_recompute: parameters released after the recompute forward and
  //   gathered again for the backward (full recompute);
  // - collective_tensor_lists: all-gather and reduce-scatter take a list of world-size tensors
  //   (torch.distributed.all_gather(list) in PyTorch <= 1.x), so each call copies every list
  //   entry out of (or into) a flat buffer: one copy kernel launch per member.
  std::string zero3_fetch = "unit";
  double zero3_persistence_threshold = 0;
  double zero3_prefetch_elements = -1;
  int zero3_prefetch_units = -1;          // units gathered ahead of the running one (-1: no limit)
  bool zero3_regather_for_recompute = false;
  bool collective_tensor_lists = false;
  // - zero3_grad_reduction: "fetch", a reduce-scatter of what each fetch gathered, once its
  //   gradients are done (FSDP); "buckets", reduce-scatters of gradient buckets (DeepSpeed's
  //   reduce_bucket_size); "allreduce_buckets", buckets all-reduced, each rank keeping its
  //   shard of the sum (DeepSpeed ZeRO-3 with reduce_scatter off, its 2021 default).
  std::string zero3_grad_reduction = "fetch";
  // Gradient bucket size of this software, MiB (0: the strategy's default; --bucket-mb wins).
  double grad_bucket_mb = 0;
};

// A shipped framework by name or a YAML file. Throws InputError naming the file, line and key,
// or the known names.
Framework load_framework(const std::string& name_or_path);
std::vector<std::string> list_frameworks();
// The framework's strategy defaults, before the strategy file and flags apply.
void apply_framework_defaults(Strategy& strategy, const Framework& framework);

}  // namespace tessera::workloads

// Model descriptions: what is trained, independent of how it is parallelized.
//
// A model is a YAML file (the zoo lives in workloads/models/, see docs/workloads.md). Transformer
// models (GPT, Llama, BERT, Mixtral-style MoE) are described by their hyper-parameters; other
// models by a generic list of layers. Every hyper-parameter can be overridden from the command
// line (ModelOverrides).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace tessera::workloads {

enum class Architecture : uint8_t { Gpt, Llama, Bert, Generic };
enum class NormKind : uint8_t { LayerNorm, RMSNorm };
enum class MlpKind : uint8_t { Gelu, SwiGLU };
enum class PositionKind : uint8_t { Learned, Rotary };

const char* to_string(Architecture a);

// One entry of a generic (non-transformer) model. Sizes are per sample.
struct GenericLayer {
  enum class Kind : uint8_t { Gemm, Elementwise, Custom };
  std::string name;
  Kind kind = Kind::Custom;
  int64_t repeat = 1;
  // gemm: a (m x k) by (k x n) product per sample; parameters n*k (+ n with bias)
  int64_t m = 0, n = 0, k = 0;
  bool bias = false;
  // custom (and optional overrides for the other kinds)
  double forward_flops = 0;      // per sample
  double backward_flops = -1;    // per sample; < 0: twice the forward
  double params = -1;            // < 0: derived (gemm) or 0
  double activation_bytes = -1;  // saved for backward, per sample; < 0: derived or 0
  double bytes = 0;              // HBM traffic of the forward per sample (elementwise, custom)
};

// A strategy setting written in the model file (its "strategy:" section), applied before
// command-line flags. Kept as text so that one parser (set_strategy_option) serves both.
struct StrategySetting {
  std::string key;
  std::string value;
  std::string where;  // "file:line" for error messages
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string source;  // the YAML file it came from
  Architecture architecture = Architecture::Gpt;

  // Transformer hyper-parameters (Megatron's names in comments).
  int64_t layers = 0;          // --num-layers
  int64_t hidden = 0;          // --hidden-size
  int64_t heads = 0;           // --num-attention-heads
  int64_t kv_heads = 0;        // --num-query-groups (0: = heads, plain multi-head attention)
  int64_t ffn_hidden = 0;      // --ffn-hidden-size (0: 4 * hidden)
  int64_t seq_length = 0;      // --seq-length
  int64_t vocab = 0;           // vocabulary before padding
  int64_t experts = 1;         // --num-experts (1: dense)
  int64_t top_k = 1;           // --moe-router-topk
  int64_t moe_ffn_hidden = 0;  // expert FFN size (0: ffn_hidden)
  NormKind norm = NormKind::LayerNorm;
  MlpKind mlp = MlpKind::Gelu;
  PositionKind position = PositionKind::Learned;
  bool bias = true;             // linear layers have biases
  bool dropout = true;          // dropout after attention, projection and MLP (masks are saved)
  bool tied_embeddings = true;  // the logits layer shares the embedding matrix

  // Generic models: the layer list, with repeats expanded by the compiler.
  std::vector<GenericLayer> generic_layers;

  // Strategy defaults from the model file's "strategy:" section.
  std::vector<StrategySetting> strategy;

  bool is_generic() const { return architecture == Architecture::Generic; }
  bool is_moe() const { return experts > 1; }
  int64_t kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int64_t expert_ffn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn(); }
  int64_t head_dim() const { return hidden / heads; }
};

// Command-line overrides (--layers --hidden --heads --kv-heads --ffn-hidden --seq --vocab
// --experts --top-k); unset fields leave the model file's value.
struct ModelOverrides {
  std::optional<int64_t> layers, hidden, heads, kv_heads, ffn_hidden, seq, vocab, experts, top_k;
};

struct ZooEntry {
  std::string name;
  std::string description;
  std::string path;
};

// The folder the zoo is read from: $TESSERA_MODELS when set, else the source tree's
// workloads/models (compiled in).
std::string zoo_directory();
// The zoo, sorted by name.
std::vector<ZooEntry> list_models();
// Loads a model by zoo name ("gpt3-175b") or by path to a YAML file (anything containing '/'
// or ending in .yaml/.yml). Throws InputError naming the file, line and key on bad input.
ModelSpec load_model(const std::string& name_or_path);
// Parses a model from YAML text; `source` names it in error messages.
ModelSpec parse_model(const std::string& yaml_text, const std::string& source);
// Applies overrides, then checks the model (positive sizes, heads dividing hidden, ...).
void apply_overrides(ModelSpec& model, const ModelOverrides& overrides);
// Sets one override by its flag name without dashes ("kv-heads", "seq", ...): for a command
// line that keeps flags as text. Throws InputError on an unknown name or a bad number.
void set_model_override(ModelOverrides& overrides, const std::string& flag,
                        const std::string& value);
// The flag names set_model_override accepts, with one-line help texts.
struct OptionInfo {
  std::string name;
  std::string help;
  bool is_switch = false;  // a flag without a value (--sequence-parallel); value "" means true
};
const std::vector<OptionInfo>& model_override_options();
// Checks sizes; throws InputError naming the values.
void validate_model(const ModelSpec& model);
// A strategy section or file as settings: nested maps become dotted keys ("embedding.tp"),
// sequences comma lists ("stage-layers: [3, 4]" -> "3,4"), each with its "file:line".
void flatten_strategy(const YAML::Node& node, const std::string& prefix, const std::string& file,
                      std::vector<StrategySetting>& out);
// The first problem of a model: its key ("heads") and what is wrong; nullopt when there is none.
struct ModelProblem {
  std::string key;
  std::string problem;
};
std::optional<ModelProblem> model_problem(const ModelSpec& model);

// Parameter counts of the whole model (embedding counted once when tied).
double total_parameters(const ModelSpec& model);

}  // namespace tessera::workloads

#include "workloads/model.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include "workloads/errors.h"
#include "workloads/limits.h"
#include "workloads/yaml_reader.h"

#ifndef TESSERA_MODEL_DIR
#define TESSERA_MODEL_DIR "workloads/models"
#endif

namespace tessera::workloads {
namespace fs = std::filesystem;

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::Gpt: return "gpt";
    case Architecture::Llama: return "llama";
    case Architecture::Bert: return "bert";
    case Architecture::Generic: return "generic";
  }
  return "?";
}

namespace {

// Reads a choice among named values, failing with the list of choices.
template <typename E>
E choice(YamlMap& map, const std::string& key, E fallback,
         const std::vector<std::pair<const char*, E>>& choices) {
  const std::string value = map.string(key, "");
  if (value.empty()) return fallback;
  std::string known;
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
    known += std::string(known.empty() ? "" : "|") + name;
  }
  map.fail(key, "unknown value '" + value + "' (expected " + known + ")");
}

GenericLayer parse_generic_layer(const YAML::Node& node, const std::string& file, size_t index) {
  YamlMap map(node, file, "layer " + std::to_string(index));
  GenericLayer layer;
  layer.name = map.string("name", "layer" + std::to_string(index));
  layer.kind = choice<GenericLayer::Kind>(map, "type", GenericLayer::Kind::Custom,
                                          {{"gemm", GenericLayer::Kind::Gemm},
                                           {"elementwise", GenericLayer::Kind::Elementwise},
                                           {"custom", GenericLayer::Kind::Custom}});
  const limits::Range dimension = limits::integers(1, limits::kMaxModelDimension);
  const limits::Range flops = limits::non_negative(limits::kMaxOpFlops);
  const limits::Range bytes = limits::non_negative(limits::kMaxOpBytes);
  layer.repeat = map.integer("repeat", 1, dimension);
  layer.m = map.integer("m", 0, dimension);
  layer.n = map.integer("n", 0, dimension);
  layer.k = map.integer("k", 0, dimension);
  layer.bias = map.boolean("bias", false);
  layer.forward_flops = map.number("forward-flops", 0, flops);
  layer.backward_flops = map.number("backward-flops", -1, flops);  // -1: twice the forward
  layer.params = map.number("params", -1, bytes);                   // -1: from the GEMM shape
  layer.activation_bytes = map.number("activation-bytes", -1, bytes);
  layer.bytes = map.number("bytes", 0, bytes);
  if (layer.kind == GenericLayer::Kind::Gemm && (layer.m <= 0 || layer.n <= 0 || layer.k <= 0))
    throw InputError(where(file, node) + ": gemm layer '" + layer.name +
                     "' needs positive m, n and k");
  map.finish();
  return layer;
}

}  // namespace

void flatten_strategy(const YAML::Node& node, const std::string& prefix, const std::string& file,
                      std::vector<StrategySetting>& out) {
  if (!node.IsMap()) throw InputError(where(file, node) + ": strategy must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix + canonical_key(it->first.as<std::string>());
    const YAML::Node value = it->second;  // a copy: it->second is a member of a temporary
    if (value.IsMap()) {
      flatten_strategy(value, key + ".", file, out);
    } else if (value.IsSequence()) {
      std::string list;
      for (const YAML::Node& item : value) {
        if (!item.IsScalar())
          throw InputError(where(file, item) + ": key '" + key + "': expected a list of values, got a nested " +
                           (item.IsMap() ? "mapping" : "list"));
        list += (list.empty() ? "" : ",") + item.Scalar();
      }
      out.push_back({key, list, where(file, it->first)});
    } else {
      out.push_back({key, value.IsNull() ? "" : value.Scalar(), where(file, it->first)});
    }
  }
}

namespace {

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const char* suffix) {
    const std::string x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

// Each override by its option name; Overrides is ModelOverrides, const or not.
template <typename Overrides>
auto override_fields(Overrides& o) {
  return std::map<std::string, decltype(&o.layers)>{
      {"layers", &o.layers},     {"hidden", &o.hidden},         {"heads", &o.heads},
      {"kv-heads", &o.kv_heads}, {"ffn-hidden", &o.ffn_hidden}, {"seq", &o.seq},
      {"vocab", &o.vocab},       {"experts", &o.experts},       {"top-k", &o.top_k}};
}

}  // namespace

ModelSpec parse_model(const std::string& text, const std::string& source) {
  const YAML::Node root = parse_yaml(text, source);
  YamlMap map(root, source, "model");
  ModelSpec m;
  m.source = source;
  m.name = map.string("name", fs::path(source).stem().string());
  m.description = map.string("description", "");
  m.architecture = choice<Architecture>(map, "architecture", Architecture::Gpt,
                                        {{"gpt", Architecture::Gpt},
                                         {"llama", Architecture::Llama},
                                         {"bert", Architecture::Bert},
                                         {"generic", Architecture::Generic}});
  // Architecture defaults; each can be overridden by its own key below.
  const bool llama = m.architecture == Architecture::Llama;
  m.norm = llama ? NormKind::RMSNorm : NormKind::LayerNorm;
  m.mlp = llama ? MlpKind::SwiGLU : MlpKind::Gelu;
  m.position = llama ? PositionKind::Rotary : PositionKind::Learned;
  m.bias = !llama;
  m.dropout = !llama;
  m.tied_embeddings = !llama;

  if (m.is_generic()) {
    std::optional<YAML::Node> layers = map.get("layers");
    if (!layers || !layers->IsSequence() || layers->size() == 0)
      map.fail("layers", "a generic model needs a non-empty list of layers");
    for (size_t i = 0; i < layers->size(); ++i)
      m.generic_layers.push_back(parse_generic_layer((*layers)[i], source, i));
    for (const GenericLayer& l : m.generic_layers) m.layers += l.repeat;
    m.seq_length = map.integer("seq", 1);
  } else {
    m.layers = map.integer("layers", 0);
    m.hidden = map.integer("hidden", 0);
    m.heads = map.integer("heads", 0);
    m.kv_heads = map.integer("kv-heads", 0);
    m.ffn_hidden = map.integer("ffn-hidden", 0);
    m.seq_length = map.integer("seq", 0);
    m.vocab = map.integer("vocab", 0);
    m.experts = map.integer("experts", 1);
    m.top_k = map.integer("top-k", 1);
    m.moe_ffn_hidden = map.integer("moe-ffn-hidden", 0);
    m.norm = choice<NormKind>(map, "norm", m.norm,
                              {{"layernorm", NormKind::LayerNorm}, {"rmsnorm", NormKind::RMSNorm}});
    m.mlp = choice<MlpKind>(map, "mlp", m.mlp, {{"gelu", MlpKind::Gelu}, {"swiglu", MlpKind::SwiGLU}});
    m.position = choice<PositionKind>(map, "position", m.position,
                                      {{"learned", PositionKind::Learned},
                                       {"rotary", PositionKind::Rotary}});
    m.bias = map.boolean("bias", m.bias);
    m.dropout = map.boolean("dropout", m.dropout);
    m.tied_embeddings = map.boolean("tied-embeddings", m.tied_embeddings);
  }
  if (std::optional<YAML::Node> strategy = map.get("strategy"))
    flatten_strategy(*strategy, "", source, m.strategy);
  map.finish();
  if (const std::optional<ModelProblem> p = model_problem(m)) map.fail(p->key, p->problem);
  return m;
}

std::optional<ModelProblem> model_problem(const ModelSpec& m) {
  const limits::Range dimension = limits::integers(1, limits::kMaxModelDimension);
  const limits::Range optional_dimension = limits::integers(0, limits::kMaxModelDimension);
  std::vector<std::tuple<const char*, int64_t, limits::Range>> values{{"layers", m.layers, dimension},
                                                                      {"seq", m.seq_length, dimension}};
  if (!m.is_generic())
    values.insert(values.end(), {{"hidden", m.hidden, dimension},
                                 {"heads", m.heads, dimension},
                                 {"vocab", m.vocab, dimension},
                                 {"experts", m.experts, dimension},
                                 {"top-k", m.top_k, dimension},
                                 {"kv-heads", m.kv_heads, optional_dimension},
                                 {"ffn-hidden", m.ffn_hidden, optional_dimension},
                                 {"moe-ffn-hidden", m.moe_ffn_hidden, optional_dimension}});
  for (const auto& [key, value, range] : values) {
    const std::string problem = limits::problem(double(value), range);
    if (!problem.empty()) return ModelProblem{key, problem};
  }
  if (m.is_generic()) return std::nullopt;
  auto str = [](int64_t v) { return std::to_string(v); };
  if (m.hidden % m.heads != 0)
    return ModelProblem{"heads", "heads (" + str(m.heads) + ") must divide hidden (" + str(m.hidden) + ")"};
  if (m.heads % m.kv_heads_or_heads() != 0)
    return ModelProblem{"kv-heads", "kv-heads (" + str(m.kv_heads) + ") must divide heads (" + str(m.heads) + ")"};
  if (m.top_k > m.experts)
    return ModelProblem{"top-k", "top-k (" + str(m.top_k) + ") must not exceed experts (" + str(m.experts) + ")"};
  return std::nullopt;
}

void validate_model(const ModelSpec& m) {
  if (const std::optional<ModelProblem> p = model_problem(m))
    throw InputError("model " + m.name + ": key '" + p->key + "': " + p->problem);
}

std::string zoo_directory() {
  if (const char* env = std::getenv("TESSERA_MODELS"); env && *env) return env;
  return TESSERA_MODEL_DIR;
}

std::vector<ZooEntry> list_models() {
  std::vector<ZooEntry> entries;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(zoo_directory(), ec)) {
    const std::string ext = file.path().extension().string();
    if (ext != ".yaml" && ext != ".yml") continue;
    const ModelSpec m = parse_model(read_text_file(file.path().string()), file.path().string());
    entries.push_back({file.path().stem().string(), m.description, file.path().string()});
  }
  std::sort(entries.begin(), entries.end(),
            [](const ZooEntry& a, const ZooEntry& b) { return a.name < b.name; });
  return entries;
}

ModelSpec load_model(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!looks_like_path(name_or_path)) {
    path = (fs::path(zoo_directory()) / (name_or_path + ".yaml")).string();
    if (!fs::exists(path)) {
      std::string names;
      for (const ZooEntry& e : list_models()) names += (names.empty() ? "" : ", ") + e.name;
      throw InputError("unknown model '" + name_or_path + "' (the zoo has: " + names + ")");
    }
  }
  return parse_model(read_text_file(path), path);
}

void apply_overrides(ModelSpec& m, const ModelOverrides& o) {
  const bool any = o.layers || o.hidden || o.heads || o.kv_heads || o.ffn_hidden || o.vocab ||
                   o.experts || o.top_k;
  if (m.is_generic() && any)
    throw InputError("model " + m.name + " is a generic layer list: only --seq can be overridden");
  if (o.layers) m.layers = *o.layers;
  if (o.hidden) m.hidden = *o.hidden;
  if (o.heads) m.heads = *o.heads;
  if (o.kv_heads) m.kv_heads = *o.kv_heads;
  if (o.ffn_hidden) m.ffn_hidden = *o.ffn_hidden;
  if (o.seq) m.seq_length = *o.seq;
  if (o.vocab) m.vocab = *o.vocab;
  if (o.experts) m.experts = *o.experts;
  if (o.top_k) m.top_k = *o.top_k;
  if (const std::optional<ModelProblem> p = model_problem(m)) {
    // Name the option when the user gave the value that is wrong.
    const auto fields = override_fields(o);
    const auto field = fields.find(p->key);
    const bool given = field != fields.end() && field->second->has_value();
    throw InputError(given ? "--" + p->key + ": " + p->problem
                           : "model " + m.name + ": key '" + p->key + "': " + p->problem);
  }
}

const std::vector<OptionInfo>& model_override_options() {
  static const std::vector<OptionInfo> options = {
      {"layers", "number of transformer layers"},
      {"hidden", "hidden size"},
      {"heads", "attention heads"},
      {"kv-heads", "key/value heads (grouped-query attention; default: heads)"},
      {"ffn-hidden", "MLP hidden size (default 4 * hidden)"},
      {"seq", "sequence length in tokens"},
      {"vocab", "vocabulary size (padded to a multiple of 128 * tp, as Megatron does)"},
      {"experts", "MoE experts per layer (1: dense)"},
      {"top-k", "experts each token is routed to"},
  };
  return options;
}

void set_model_override(ModelOverrides& o, const std::string& flag, const std::string& value) {
  const auto fields = override_fields(o);
  auto it = fields.find(canonical_key(flag));
  if (it == fields.end()) throw InputError("unknown model option --" + flag);
  size_t used = 0;
  int64_t number = 0;
  try {
    number = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size())
    throw InputError("--" + flag + " expects an integer, got '" + value + "'");
  *it->second = number;
}

double total_parameters(const ModelSpec& m) {
  if (m.is_generic()) {
    double total = 0;
    for (const GenericLayer& l : m.generic_layers) {
      double p = l.params;
      if (p < 0) p = l.kind == GenericLayer::Kind::Gemm ? double(l.n) * l.k + (l.bias ? l.n : 0) : 0;
      total += p * l.repeat;
    }
    return total;
  }
  const double h = m.hidden, d = m.head_dim(), g = m.kv_heads_or_heads();
  const double norm = m.norm == NormKind::LayerNorm ? 2 * h : h;
  const double qkv = h * (h + 2 * g * d) + (m.bias ? h + 2 * g * d : 0);
  const double proj = h * h + (m.bias ? h : 0);
  const double mlp_in = m.mlp == MlpKind::SwiGLU ? 2.0 : 1.0;
  auto mlp = [&](double f) { return mlp_in * h * f + f * h + (m.bias ? mlp_in * f + h : 0); };
  const double dense_mlp = m.is_moe() ? double(m.experts) * mlp(m.expert_ffn()) + h * m.experts
                                      : mlp(m.ffn());
  const double layer = 2 * norm + qkv + proj + dense_mlp;
  const double embedding = double(m.vocab) * h;
  const double position = m.position == PositionKind::Learned ? double(m.seq_length) * h : 0;
  const double output = m.tied_embeddings ? 0 : embedding;
  return m.layers * layer + embedding + position + output + norm;
}

}  // namespace tessera::workloads

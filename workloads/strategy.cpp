#include "workloads/strategy.h"

#include "workloads/framework.h"

#include <functional>
#include <numeric>
#include <sstream>

#include "workloads/errors.h"
#include "workloads/limits.h"
#include "workloads/yaml_reader.h"

namespace tessera::workloads {

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

const char* to_string(Axis a) {
  switch (a) {
    case Axis::TP: return "tp";
    case Axis::CP: return "cp";
    case Axis::EP: return "ep";
    case Axis::DP: return "dp";
    case Axis::PP: return "pp";
  }
  return "?";
}

namespace {

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& want) {
  throw InputError("--" + key + " expects " + want + ", got '" + value + "'");
}

// An integer in [min, max]; parallel sizes and batch sizes are bounded by what tessera builds
// (docs/limits.md), so products of them stay far from int64's end.
int64_t parse_int(const std::string& key, const std::string& value, int64_t min,
                  int64_t max = limits::kMaxModelDimension) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || n < min || n > max)
    bad(key, value, limits::describe(limits::integers(min, max)));
  return n;
}

double parse_number(const std::string& key, const std::string& value, const limits::Range& range) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !limits::problem(x, range).empty())
    bad(key, value, limits::describe(range));
  return x;
}

bool parse_switch(const std::string& key, const std::string& value) {
  if (value.empty() || value == "true" || value == "1" || value == "on" || value == "yes")
    return true;
  if (value == "false" || value == "0" || value == "off" || value == "no") return false;
  bad(key, value, "true or false");
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

struct OptionSetter {
  OptionInfo info;
  std::function<void(Strategy&, const std::string& key, const std::string& value)> set;
};

// A parallel size or count that fits the largest platform.
int as_int(const std::string& k, const std::string& v, int64_t min) {
  return static_cast<int>(parse_int(k, v, min, limits::kMaxGpus));
}

const std::vector<OptionSetter>& setters() {
  static const std::vector<OptionSetter> table = {
      {{"dp", "data-parallel size (default: the GPUs left by tp * pp * cp)"},
       [](Strategy& s, auto& k, auto& v) { s.dp = as_int(k, v, 1); }},
      {{"tp", "tensor-parallel size"}, [](Strategy& s, auto& k, auto& v) { s.tp = as_int(k, v, 1); }},
      {{"pp", "pipeline-parallel size"},
       [](Strategy& s, auto& k, auto& v) { s.pp = as_int(k, v, 1); }},
      {{"cp", "context-parallel size (sequence split across GPUs)"},
       [](Strategy& s, auto& k, auto& v) { s.cp = as_int(k, v, 1); }},
      {{"ep", "expert-parallel size (divides dp)"},
       [](Strategy& s, auto& k, auto& v) { s.ep = as_int(k, v, 1); }},
      {{"sequence-parallel", "Megatron sequence parallelism with TP", true},
       [](Strategy& s, auto& k, auto& v) { s.sequence_parallel = parse_switch(k, v); }},
      {{"zero", "ZeRO stage 0|1|2|3 (3 is FSDP-like)"},
       [](Strategy& s, auto& k, auto& v) {
         s.zero = as_int(k, v, 0);
         if (s.zero > 3) bad(k, v, "0, 1, 2 or 3");
       }},
      {{"micro-batch", "samples per micro-batch"},
       [](Strategy& s, auto& k, auto& v) { s.micro_batch = parse_int(k, v, 1); }},
      {{"global-batch", "samples per iteration (default dp * micro-batch)"},
       [](Strategy& s, auto& k, auto& v) { s.global_batch = parse_int(k, v, 1); }},
      {{"schedule", "pipeline schedule gpipe|1f1b|interleaved"},
       [](Strategy& s, auto& k, auto& v) {
         if (v == "gpipe") s.schedule = Schedule::GPipe;
         else if (v == "1f1b") s.schedule = Schedule::OneFOneB;
         else if (v == "interleaved") s.schedule = Schedule::Interleaved;
         else bad(k, v, "gpipe, 1f1b or interleaved");
       }},
      {{"vpp", "model chunks per pipeline stage (interleaved schedule)"},
       [](Strategy& s, auto& k, auto& v) { s.vpp = as_int(k, v, 1); }},
      {{"recompute", "activation recomputation none|selective|full"},
       [](Strategy& s, auto& k, auto& v) {
         if (v == "none") s.recompute = Recompute::None;
         else if (v == "selective") s.recompute = Recompute::Selective;
         else if (v == "full") s.recompute = Recompute::Full;
         else bad(k, v, "none, selective or full");
       }},
      {{"attention", "attention core flash (fused) | unfused"},
       [](Strategy& s, auto& k, auto& v) {
         if (v == "flash") s.flash_attention = true;
         else if (v == "unfused") s.flash_attention = false;
         else bad(k, v, "flash or unfused");
       }},
      {{"overlap-grad-reduce", "reduce gradient buckets during backward (default on)", true},
       [](Strategy& s, auto& k, auto& v) { s.overlap_grad_reduce = parse_switch(k, v); }},
      {{"bucket-mb", "gradient bucket size in MiB"},
       [](Strategy& s, auto& k, auto& v) { s.bucket_mb = parse_number(k, v, limits::positive(1 << 20)); }},
      {{"overlap-param-gather", "ZeRO parameter all-gathers overlap the forward (default on)",
        true},
       [](Strategy& s, auto& k, auto& v) { s.overlap_param_gather = parse_switch(k, v); }},
      {{"tp-comm-overlap", "split TP collectives in chunks that overlap their GEMMs", true},
       [](Strategy& s, auto& k, auto& v) { s.tp_comm_overlap = parse_switch(k, v); }},
      {{"tp-comm-chunks", "chunks per overlapped TP collective"},
       [](Strategy& s, auto& k, auto& v) { s.tp_comm_chunks = as_int(k, v, 1); }},
      {{"rank-order", "rank order, fastest first (default tp-cp-ep-dp-pp)"},
       [](Strategy& s, auto& k, auto& v) {
         const std::vector<std::string> parts = split(v, '-');
         std::array<Axis, 5> order{};
         int seen = 0;
         if (parts.size() != 5) bad(k, v, "a permutation of tp-cp-ep-dp-pp");
         for (size_t i = 0; i < parts.size(); ++i) {
           bool found = false;
           for (Axis a : {Axis::TP, Axis::CP, Axis::EP, Axis::DP, Axis::PP})
             if (parts[i] == to_string(a) && !(seen & (1 << int(a)))) {
               order[i] = a;
               seen |= 1 << int(a);
               found = true;
             }
           if (!found) bad(k, v, "a permutation of tp-cp-ep-dp-pp");
         }
         s.rank_order = order;
       }},
      {{"dtype", "compute dtype fp32|tf32|fp16|bf16|fp8"},
       [](Strategy& s, auto& k, auto& v) {
         if (!parse_dtype(v, s.dtype)) bad(k, v, "fp32, tf32, fp16, bf16 or fp8");
       }},
      {{"grad-dtype", "gradient buffer and reduction dtype (default fp32)"},
       [](Strategy& s, auto& k, auto& v) {
         if (!parse_dtype(v, s.grad_dtype)) bad(k, v, "fp32, tf32, fp16, bf16 or fp8");
       }},
      {{"stage-layers", "layers per virtual pipeline stage, comma list (strategy tree)"},
       [](Strategy& s, auto& k, auto& v) {
         s.stage_layers.clear();
         for (const std::string& part : split(v, ',')) s.stage_layers.push_back(parse_int(k, part, 0));
       }},
      {{"extra-warmup", "forwards each pipeline stage runs ahead of its schedule's warm-up, comma list (non-increasing)"},
       [](Strategy& s, auto& k, auto& v) {
         s.extra_warmup.clear();
         for (const std::string& part : split(v, ',')) s.extra_warmup.push_back(parse_int(k, part, 0));
       }},
      {{"first-stage-layers", "layers of the first pipeline stage (uneven partition)"},
       [](Strategy& s, auto& k, auto& v) { s.first_stage_layers = parse_int(k, v, 1); }},
      {{"last-stage-layers", "layers of the last pipeline stage (uneven partition)"},
       [](Strategy& s, auto& k, auto& v) { s.last_stage_layers = parse_int(k, v, 1); }},
      {{"embedding-tp",
        "tensor-parallel size of the embedding, logits and loss; divides tp (default tp; strategy "
        "tree 'embedding: {tp: N}')"},
       [](Strategy& s, auto& k, auto& v) { s.embedding_tp = as_int(k, v, 1); }},
  };
  return table;
}

// Strategy-tree paths (nested YAML maps, flattened with dots) and the flags they stand for.
const std::pair<const char*, const char*> kTreePaths[] = {{"embedding.tp", "embedding-tp"}};

}  // namespace

void set_strategy_option(Strategy& s, const std::string& key, const std::string& value) {
  std::string k = canonical_key(key);
  for (const auto& [path, flag] : kTreePaths)
    if (k == path) k = flag;
  for (const OptionSetter& o : setters())
    if (o.info.name == k) {
      o.set(s, k, value);
      return;
    }
  throw InputError("unknown strategy option '" + key + "'");
}

const std::vector<OptionInfo>& strategy_options() {
  static const std::vector<OptionInfo> infos = [] {
    std::vector<OptionInfo> v;
    for (const OptionSetter& o : setters()) v.push_back(o.info);
    return v;
  }();
  return infos;
}

namespace {
void apply_settings(Strategy& s, const std::vector<StrategySetting>& settings) {
  for (const StrategySetting& setting : settings) {
    try {
      set_strategy_option(s, setting.key, setting.value);
    } catch (const InputError& e) {
      throw InputError(setting.where + ": key '" + setting.key + "': " + e.what());
    }
  }
}
}  // namespace

Strategy default_strategy(const ModelSpec& model, const Framework* framework) {
  Strategy s;
  if (framework != nullptr) apply_framework_defaults(s, *framework);
  apply_settings(s, model.strategy);
  return s;
}

void apply_strategy_file(Strategy& s, const std::string& path) {
  const YAML::Node root = parse_yaml(read_text_file(path), path);
  if (!root.IsMap()) throw InputError(path + ": a strategy file must be a mapping");
  std::vector<StrategySetting> settings;
  flatten_strategy(root, "", path, settings);
  apply_settings(s, settings);
}

ResolvedStrategy resolve(const ModelSpec& m, const Strategy& input, int gpus) {
  ResolvedStrategy r;
  r.s = input;
  Strategy& s = r.s;
  auto fail = [](const std::string& message) { throw InputError("invalid strategy: " + message); };
  auto str = [](int64_t v) { return std::to_string(v); };
  const int64_t model_parallel = int64_t(s.tp) * s.pp * s.cp;
  if (s.dp == 0) {
    if (gpus > 0 && gpus % model_parallel != 0)
      fail("tp * pp * cp (" + str(s.tp) + " * " + str(s.pp) + " * " + str(s.cp) + " = " +
           str(model_parallel) + ") does not divide the " + str(gpus) + " GPUs");
    s.dp = gpus > 0 ? static_cast<int>(gpus / model_parallel) : 1;
  }
  r.world = static_cast<int>(model_parallel * s.dp);
  if (gpus > 0 && r.world != gpus)
    fail("dp * tp * pp * cp (" + str(s.dp) + " * " + str(s.tp) + " * " + str(s.pp) + " * " +
         str(s.cp) + " = " + str(r.world) + ") != " + str(gpus) + " GPUs");
  if (s.global_batch == 0) s.global_batch = s.dp * s.micro_batch;
  if (s.global_batch % (s.dp * s.micro_batch) != 0)
    fail("global-batch (" + str(s.global_batch) + ") is not divisible by dp * micro-batch (" +
         str(s.dp) + " * " + str(s.micro_batch) + ")");
  r.micro_batches = s.global_batch / (s.dp * s.micro_batch);

  if (m.is_generic() && (s.tp > 1 || s.cp > 1 || s.ep > 1))
    fail("model " + m.name + " is a generic layer list: it supports dp, pp and zero only, got tp " +
         str(s.tp) + ", cp " + str(s.cp) + ", ep " + str(s.ep));
  if (!m.is_generic()) {
    if (m.heads % s.tp != 0)
      fail("tp (" + str(s.tp) + ") does not divide heads (" + str(m.heads) + ")");
    if (m.kv_heads_or_heads() % s.tp != 0)
      fail("tp (" + str(s.tp) + ") does not divide kv-heads (" + str(m.kv_heads_or_heads()) + ")");
    if (m.ffn() % s.tp != 0 || m.expert_ffn() % s.tp != 0)
      fail("tp (" + str(s.tp) + ") does not divide ffn-hidden (" + str(m.ffn()) + ")");
    if (m.seq_length % s.cp != 0 || (s.cp > 1 && m.seq_length % (2 * s.cp) != 0))
      fail("2 * cp (2 * " + str(s.cp) + ") does not divide seq (" + str(m.seq_length) +
           "): context parallelism splits the sequence in 2 * cp load-balanced chunks");
    if (s.sequence_parallel && (s.micro_batch * m.seq_length / s.cp) % s.tp != 0)
      fail("tp (" + str(s.tp) + ") does not divide the tokens per micro-batch for sequence parallelism");
    if (m.is_moe() && m.experts % s.ep != 0)
      fail("ep (" + str(s.ep) + ") does not divide experts (" + str(m.experts) + ")");
    if (!m.is_moe() && s.ep > 1) fail("ep (" + str(s.ep) + ") needs a MoE model (experts > 1)");
    if (m.is_moe() && s.tp > 1 && !s.sequence_parallel)
      fail("MoE with tp (" + str(s.tp) + ") > 1 needs --sequence-parallel (as in Megatron)");
    // The vocabulary-parallel part (embedding, logits, loss) with its own TP size e: each TP
    // group runs it as tp / e groups of e ranks, each group on an equal slice of the tokens.
    r.embedding_tp = s.embedding_tp == 0 ? s.tp : s.embedding_tp;
    const int e = r.embedding_tp;
    if (s.tp % e != 0)
      fail("embedding.tp (" + str(e) + ") does not divide tp (" + str(s.tp) +
           "): the embedding, logits and loss run on groups of embedding.tp ranks inside each "
           "TP group");
    const int64_t tokens = s.micro_batch * m.seq_length / s.cp;
    if (tokens % (s.tp / e) != 0)
      fail("tp / embedding.tp (" + str(s.tp) + " / " + str(e) + " = " + str(s.tp / e) +
           ") does not divide the tokens per micro-batch (" + str(tokens) +
           " = micro-batch * seq / cp): each embedding group takes an equal slice of them");
    const int64_t multiple = 128 * int64_t(e);
    r.padded_vocab = (m.vocab + multiple - 1) / multiple * multiple;
  } else if (s.embedding_tp > 1) {
    fail("model " + m.name + " is a generic layer list: it has no embedding to split, got "
         "embedding.tp " + str(s.embedding_tp));
  }
  if (s.dp % s.ep != 0) fail("ep (" + str(s.ep) + ") does not divide dp (" + str(s.dp) + ")");
  r.edp = s.dp / s.ep;
  if (s.bucket_mb <= 0) fail("bucket-mb must be positive");

  // Pipeline partition.
  if (s.schedule == Schedule::Interleaved) {
    if (s.pp < 2) fail("the interleaved schedule needs pp > 1, got pp " + str(s.pp));
    if (s.vpp < 2) fail("the interleaved schedule needs vpp > 1, got vpp " + str(s.vpp));
    if (r.micro_batches % s.pp != 0)
      fail("the interleaved schedule needs the micro-batches per replica (" +
           str(r.micro_batches) + " = global-batch / (dp * micro-batch)) to be a multiple of pp (" +
           str(s.pp) + ")");
  } else if (s.vpp != 1) {
    fail("vpp (" + str(s.vpp) + ") > 1 needs --schedule interleaved, got " + to_string(s.schedule));
  }
  if (!s.extra_warmup.empty()) {
    if (int64_t(s.extra_warmup.size()) != s.pp)
      fail("extra-warmup lists " + str(s.extra_warmup.size()) + " stages, pp is " + str(s.pp));
    if (s.schedule == Schedule::GPipe) fail("extra-warmup needs 1f1b or interleaved (gpipe runs every forward first)");
    for (size_t i = 1; i < s.extra_warmup.size(); ++i)
      if (s.extra_warmup[i] > s.extra_warmup[i - 1])
        fail("extra-warmup must not increase from one stage to the next (stage " + str(int64_t(i)) + ": " +
             str(s.extra_warmup[i]) + " > " + str(s.extra_warmup[i - 1]) + "): the stage would wait for a backward its "
             "predecessor has not started");
  }
  r.virtual_stages = s.pp * s.vpp;
  const int64_t L = m.layers;
  if (!s.stage_layers.empty()) {
    if (int64_t(s.stage_layers.size()) != r.virtual_stages)
      fail("stage-layers lists " + str(s.stage_layers.size()) + " stages, pp * vpp is " +
           str(r.virtual_stages));
    const int64_t sum = std::accumulate(s.stage_layers.begin(), s.stage_layers.end(), int64_t(0));
    if (sum != L) fail("stage-layers add up to " + str(sum) + ", the model has " + str(L) + " layers");
    r.stage_layers = s.stage_layers;
  } else if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    if (s.vpp != 1) fail("first/last-stage-layers need vpp 1; use stage-layers with vpp > 1");
    if (s.pp < 2) fail("first/last-stage-layers need pp > 1");
    int64_t rest = L, middle = s.pp;
    if (s.first_stage_layers > 0) rest -= s.first_stage_layers, --middle;
    if (s.last_stage_layers > 0) rest -= s.last_stage_layers, --middle;
    if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % middle != 0))
      fail("the " + str(L) + " layers minus first (" + str(s.first_stage_layers) + ") and last (" +
           str(s.last_stage_layers) + ") stage layers do not split evenly over the other " +
           str(middle) + " stages");
    for (int i = 0; i < s.pp; ++i) {
      int64_t n = middle > 0 ? rest / middle : 0;
      if (i == 0 && s.first_stage_layers > 0) n = s.first_stage_layers;
      if (i == s.pp - 1 && s.last_stage_layers > 0) n = s.last_stage_layers;
      r.stage_layers.push_back(n);
    }
  } else {
    if (L % s.pp != 0) fail("pp (" + str(s.pp) + ") does not divide layers (" + str(L) + ")");
    if ((L / s.pp) % s.vpp != 0)
      fail("vpp (" + str(s.vpp) + ") does not divide the layers per stage (" + str(L / s.pp) +
           " = " + str(L) + " layers / pp " + str(s.pp) + ")");
    r.stage_layers.assign(r.virtual_stages, L / r.virtual_stages);
  }
  int64_t first = 0;
  for (int64_t n : r.stage_layers) {
    r.stage_first_layer.push_back(first);
    first += n;
  }
  return r;
}

}  // namespace tessera::workloads

#include "analytic/iteration.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "analytic/event_queue.h"
#include "analytic/rank_classes.h"
#include "models/gpu/program_graph.h"
#include "workloads/parallel_for.h"

namespace tessera::analytic {
namespace {

using workloads::OpKind;

// Compute, exposed and overlapped communication and idle time, as models::GpuActivity keeps
// them, on the analytic clock.
struct Activity {
  int computing = 0, communicating = 0;
  double last = 0, compute = 0, exposed = 0, overlapped = 0, idle = 0;
  models::TimeLedger causes;
  void change(double now, int dc, int dm, models::TimeCause cause) {
    if (dc + dm > 0) causes.begin(now, cause);
    else if (dc + dm < 0) causes.end(now, cause);
    const double elapsed = now - last;
    if (computing > 0) {
      compute += elapsed;
      if (communicating > 0) overlapped += elapsed;
    } else if (communicating > 0) {
      exposed += elapsed;
    } else {
      idle += elapsed;
    }
    last = now;
    computing += dc;
    communicating += dm;
  }
};

// The op whose end an op's start waited for (critical path): class and op, class -1 for none.
struct Binder {
  int32_t cls = -1;
  uint32_t op = 0;
};

// What the walk needs of a compute or copy op. Kernels of the same work and cause repeat from
// layer to layer and micro-batch to micro-batch, so a program has a few hundred of these, and
// they stay in cache.
struct KernelSummary {
  double seconds = 0;     // on an idle GPU (a copy: on the copy engine)
  double host_share = 0;  // of which the host's launch wait
  models::TimeCause cause = models::TimeCause::Compute;  // compute or optimizer
  models::ComputeCause compute_cause = models::ComputeCause::Gemm;
};

// Kernels that run back to back: a compute op whose only successor is the next op of the
// program, itself a compute op that waits for nothing else, in a program whose compute ops are
// all on one stream (so no other kernel can queue between them: docs/analytic.md, "Speed").
// The walk runs them as one: an event and a queue entry for the run instead of one per kernel,
// its time split among its members by their work. Runs repeat from micro-batch to micro-batch
// as kernels do, so a program has a few dozen.
struct KernelRun {
  double seconds = 0;   // its members' on an idle GPU, added in order
  uint32_t first = 0;   // its members' kernels: ProgramSummary::members[first, first + count)
  uint32_t count = 0;
  models::TimeCause cause = models::TimeCause::Compute;  // every member's
};

// Per op, what the walk reads of it, in 12 bytes: the walk's working set is one array of these
// per program walked, per rank walked the counts of predecessors not done, and the graph's
// successor lists; never the program's ops.
struct OpInfo {
  uint32_t successors = 0;  // its first in the graph's successor list; the next op's first ends them
  uint32_t info = 0;        // compute: its KernelRun (a run's first op); copy: its KernelSummary; else its Communication
  OpKind kind = OpKind::Compute;
};

// The walk moves through the programs of all the ranks walked at once, in about program order
// in each: more streams than the hardware prefetcher follows. It fetches what it will read of
// the ops a little ahead itself.
constexpr uint32_t kAhead = 16;
template <typename T>
void prefetch(const std::vector<T>& v, size_t i) {
  if (i < v.size()) __builtin_prefetch(v.data() + i);
}

// An op's count of predecessors not done, once it is done.
constexpr uint32_t kDone = std::numeric_limits<uint32_t>::max();

// A program summarised once (its kernels costed, its ops' states laid out), shared by the ranks
// walked that run it.
struct ProgramSummary {
  std::shared_ptr<const models::ProgramGraph> graph;
  std::vector<OpInfo> ops;  // one per op, and one more that ends the last op's successors
  std::vector<KernelSummary> kernels;
  std::vector<KernelRun> runs;
  std::vector<uint32_t> members;  // the runs' kernels, each run's in a row
  std::vector<uint32_t> communication;  // the communication ops, in program order
};

// A program's kernel runs, each distinct sequence of kernels once: a run is found from the
// run of its members but the last and its last kernel (most often the one found before).
class RunTable {
 public:
  explicit RunTable(ProgramSummary& summary) : summary_(summary) {}
  uint32_t single(uint32_t kernel) {
    if (kernel >= single_.size()) single_.resize(kernel + 1, kNone);
    if (single_[kernel] == kNone) single_[kernel] = add(kNone, kernel);
    return single_[kernel];
  }
  uint32_t extend(uint32_t run, uint32_t kernel) {
    Child& last = last_child_[run];
    if (last.kernel == kernel) return last.run;
    const uint64_t key = uint64_t(run) << 32 | kernel;
    auto it = children_.find(key);
    const uint32_t child = it != children_.end() ? it->second : children_[key] = add(run, kernel);
    last_child_[run] = Child{kernel, child};  // (add may have moved `last`)
    return child;
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t add(uint32_t parent, uint32_t kernel) {
    std::vector<uint32_t>& members = summary_.members;
    const KernelSummary& k = summary_.kernels[kernel];
    KernelRun run{k.seconds, static_cast<uint32_t>(members.size()), 1, k.cause};
    if (parent != kNone) {
      const KernelRun p = summary_.runs[parent];
      for (uint32_t m = 0; m < p.count; ++m) members.push_back(members[p.first + m]);
      run.seconds = p.seconds + k.seconds;
      run.count = p.count + 1;
    }
    members.push_back(kernel);
    summary_.runs.push_back(run);
    last_child_.push_back(Child{});
    return static_cast<uint32_t>(summary_.runs.size() - 1);
  }
  struct Child {
    uint32_t kernel = kNone, run = kNone;
  };
  ProgramSummary& summary_;
  std::vector<uint32_t> single_;    // by kernel: its run alone
  std::vector<Child> last_child_;   // by run: the last run found from it
  std::unordered_map<uint64_t, uint32_t> children_;  // (run, kernel) -> run
};

// A communication op of a rank walked: collective, send or receive.
struct Communication {
  uint32_t sequence = 0;  // collectives: call number on the communicator; p2p: per (kind, peer class, tag)
  int32_t peer = 0;       // a collective: its group; a send or receive: the peer's class
  uint32_t tag = 0;
  uint16_t channels = 0;  // a collective: the SMs it holds
  models::TimeCause cause = models::TimeCause::Idle;
  double seconds = 0;  // a collective: once every member joined; a send: until its last byte is sent
  double delay = 0;    // a collective: its launch; a send: the path's latency
  double bytes = 0;    // a collective: the payload a member sends; a send or receive: its message
};

// One representative rank being walked.
struct RankState {
  const workloads::Rank* rank = nullptr;
  std::shared_ptr<const ProgramSummary> summary;
  const OpInfo* op = nullptr;   // the summary's
  std::vector<uint32_t> waits;  // per op: predecessors not done (kDone once done)
  std::vector<Communication> communication;
  std::vector<std::pair<uint32_t, int>> sends;  // until start_rank: sends to cost, (communication op, peer rank)
  // Critical path (when asked for): per op, what made it ready, what its start waited for, and
  // its end.
  std::vector<Binder> ready_by, bound_by;
  std::vector<double> end;
  uint32_t last_kernel = 0, last_copy = 0;
  uint64_t done = 0;
  // The compute engine: one kernel run at a time in arrival order. `remaining`: the running
  // run's work left (idle-GPU seconds) at `progress_at`; of its members, `member` is the first
  // not done, which started at `member_start`, after `member_work` of the run's work.
  std::deque<uint32_t> queue;
  int64_t running = -1;
  double remaining = 0, progress_at = 0;
  uint32_t member = 0;
  double member_start = 0, member_work = 0;
  int sms = 0;
  double share = 1.0;
  double copy_free = 0;
  Activity activity;
  RankCost cost;
  const KernelRun& run(uint32_t op) const { return summary->runs[this->op[op].info]; }
};

// Events other than kernels' ends (which the walk keeps apart: Walk::kernel_ends_).
enum class EventKind : uint8_t { Ready, OpDone, SmsAcquired };

struct Event {
  double time;
  uint64_t sequence;
  uint32_t op;
  int32_t cls;
  EventKind kind;
};

struct Gathering {  // a collective call whose members are joining
  int expected = 0, arrived = 0;
  double ready = 0;
  Binder last;  // the member that joined last
  std::vector<std::pair<int, uint32_t>> members;  // (class, op)
};

class Walk {
 public:
  Walk(const platforms::PlatformConfig& platform, const platforms::RoutedTopology& topology,
       const workloads::Job& job, const AnalyticOptions& options)
      : platform_(platform), topology_(topology), job_(job), options_(options),
        costs_(platform, topology, job, options.costs),
        sm_count_(std::max(1, platform.gpu.sm_count)), tracking_(options.critical_path) {
    classes_ = rank_classes(job, costs_.shapes());
  }

  AnalyticResult run();

 private:
  void summarize_all();
  void init_rank(int cls, OpCosts& costs);
  void start_rank(int cls);
  void push(double time, EventKind kind, int cls, uint32_t op) {
    events_.push(Event{time, next_sequence_++, op, cls, kind});
  }
  // The running kernel of `cls` ends at `time` (ordered among the events as if pushed now).
  void kernel_ends(int cls, double time) { kernel_ends_.set(uint32_t(cls), time, next_sequence_++); }
  void ready(int cls, uint32_t op, double now, Binder from = Binder{});
  void collective_joined(int cls, uint32_t op, const Communication& c, double now);
  void send(int cls, uint32_t op, const Communication& c, double now);
  void receive(int cls, uint32_t op, const Communication& c, double now);
  void start_kernel(int cls, double now, Binder waited_for);
  Binder ready_binder(int cls, uint32_t op) const {
    return tracking_ ? ranks_[size_t(cls)].ready_by[op] : Binder{};
  }
  void bind(int cls, uint32_t op, Binder b) {
    if (tracking_) ranks_[size_t(cls)].bound_by[op] = b;
  }
  std::vector<PathSegment> critical_path() const;
  // `runs`: kernels that run back to back as runs, where the program's compute ops share a
  // stream (else each kernel its own run).
  std::shared_ptr<const ProgramSummary> summarize(const workloads::Rank& rank,
                                                  std::shared_ptr<const models::ProgramGraph> graph, bool runs,
                                                  OpCosts& costs) const;
  void kernel_done(int cls, double now);
  void progress(int cls, double from, double to, double now, bool last);
  void member_done(int cls, uint32_t op, double start, double end);
  void set_sms(int cls, int delta, double now);
  void op_done(int cls, uint32_t op, double now);
  int group(int communicator);
  std::string describe_stuck() const;
  // The cause a communication op is charged to (communicators' causes found once).
  models::TimeCause cause(const workloads::Rank& rank, const workloads::Op& op) const {
    if (op.kind != OpKind::Collective) return models::cause_of_op(job_, rank, op);
    return communicator_causes_[size_t(rank.communicators[size_t(op.slot)])];
  }
  AnalyticResult collect();

  const platforms::PlatformConfig& platform_;
  const platforms::RoutedTopology& topology_;
  const workloads::Job& job_;
  const AnalyticOptions& options_;
  OpCosts costs_;  // (the walk's; and the first thread's while programs and ranks are summarised)
  const int sm_count_;
  RankClasses classes_;
  std::vector<RankState> ranks_;  // by class
  EventQueue<Event> events_;
  KeyedQueue kernel_ends_;  // by class: when its running kernel ends
  uint64_t next_sequence_ = 0;
  // Collectives meet by the members' (class, slot) set of their communicator and call number.
  std::vector<int> group_of_communicator_;
  std::vector<models::TimeCause> communicator_causes_;
  std::map<std::vector<int64_t>, int> groups_;
  std::vector<int> group_size_;
  struct KeyHash {
    size_t operator()(const std::pair<int, uint32_t>& k) const { return size_t(k.first) * 1000003u ^ k.second; }
    size_t operator()(const std::tuple<int, int, uint32_t, uint32_t>& k) const {
      const auto [a, b, c, d] = k;
      return ((size_t(a) * 1000003u ^ size_t(b)) * 1000003u ^ c) * 1000003u ^ d;
    }
  };
  std::unordered_map<std::pair<int, uint32_t>, Gathering, KeyHash> gathering_;
  // Point-to-point messages by (source class, destination class, tag, sequence).
  using MessageKey = std::tuple<int, int, uint32_t, uint32_t>;
  struct Sent {
    double arrival = 0;  // of the last byte
    double start = 0;
    Binder send;
  };
  std::unordered_map<MessageKey, Sent, KeyHash> sent_;
  struct Posted {  // a receive waiting for its send
    int cls = 0;
    uint32_t op = 0;
    double at = 0;
  };
  std::unordered_map<MessageKey, Posted, KeyHash> posted_;
  const bool tracking_;
  Binder last_op_;  // the op that ended last
  uint64_t steps_ = 0;
};

int Walk::group(int communicator) {
  int& g = group_of_communicator_[size_t(communicator)];
  if (g >= 0) return g;
  std::vector<int64_t> members;
  for (int m : job_.communicators[size_t(communicator)].ranks)
    members.push_back(int64_t(classes_.of_rank[size_t(m)]) << 16 | slot_of(job_.ranks[size_t(m)], communicator));
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const auto [it, inserted] = groups_.emplace(members, static_cast<int>(groups_.size()));
  if (inserted) group_size_.push_back(static_cast<int>(members.size()));
  return g = it->second;
}

// A class's own state: its representative, its ops' counts, its communication ops costed but
// sends (a collective's `peer` its communicator until start_rank). Classes share nothing here:
// they are set up side by side, each thread with its own costs; a send's path is costed in
// start_rank, as the platform's routes are not for several threads at once.
void Walk::init_rank(int cls, OpCosts& costs) {
  RankState& s = ranks_[size_t(cls)];
  s.rank = &job_.ranks[size_t(classes_.representative[size_t(cls)])];
  s.cost.rank = s.rank->rank;
  if (options_.trace) s.activity.causes.enable_spans();
  const auto& ops = s.rank->program->ops;
  s.op = s.summary->ops.data();
  s.waits = s.summary->graph->waits;
  if (tracking_) {
    s.ready_by.assign(ops.size(), Binder{});
    s.bound_by.assign(ops.size(), Binder{});
    s.end.assign(ops.size(), 0.0);
  }
  std::vector<uint32_t> own_calls;
  const std::vector<uint32_t>& calls = models::rank_calls(*s.rank, *s.summary->graph, own_calls);
  std::unordered_map<MessageKey, uint32_t, KeyHash> messages;  // (kind, peer class, tag, 0)
  s.communication.resize(s.summary->communication.size());
  const std::vector<uint32_t>& communication = s.summary->communication;
  for (size_t k = 0; k < s.communication.size(); ++k) {
    // (the ops lie far apart in a program of millions: fetched a few ahead)
    if (k + 8 < communication.size()) __builtin_prefetch(&ops[communication[k + 8]]);
    const uint32_t i = communication[k];
    const workloads::Op& op = ops[i];
    Communication& c = s.communication[k];
    c.cause = cause(*s.rank, op);
    if (op.kind == OpKind::Collective) {
      const CollectiveCost cost = costs.collective(*s.rank, op);
      c.sequence = calls[i];
      c.peer = s.rank->communicators[size_t(op.slot)];
      c.channels = static_cast<uint16_t>(std::min(cost.channels, 0xffff));
      c.seconds = cost.seconds;
      c.delay = cost.launch_s;
      c.bytes = cost.member_bytes;
      continue;
    }
    const int peer = s.rank->peers[size_t(op.slot)];
    c.peer = classes_.of_rank[size_t(peer)];
    c.tag = op.tag;
    c.sequence = messages[{int(op.kind), c.peer, op.tag, 0}]++;
    c.bytes = double(op.message_bytes);
    if (op.kind == OpKind::Send) s.sends.emplace_back(uint32_t(k), peer);
  }
}

// What classes share, in class order: collectives' groups numbered, sends' paths costed (the
// platform's routes build their tables as they are first asked), the first ops made ready.
void Walk::start_rank(int cls) {
  RankState& s = ranks_[size_t(cls)];
  for (size_t k = 0; k < s.communication.size(); ++k)
    if (s.op[s.summary->communication[k]].kind == OpKind::Collective)
      s.communication[k].peer = group(s.communication[k].peer);
  for (const auto& [k, peer] : s.sends) {
    Communication& c = s.communication[k];
    const TransferCost t = costs_.transfer(s.rank->rank, peer, uint64_t(c.bytes), c.tag);
    c.seconds = t.serialization_s;
    c.delay = t.latency_s;
  }
  s.sends = {};
  for (uint32_t i = 0; i < s.waits.size(); ++i)
    if (s.waits[i] == 0) push(0.0, EventKind::Ready, cls, i);
}

void Walk::ready(int cls, uint32_t op, double now, Binder from) {
  RankState& s = ranks_[size_t(cls)];
  const OpInfo& state = s.op[op];
  if (tracking_) s.ready_by[op] = from;
  switch (state.kind) {
    case OpKind::Compute:
      s.queue.push_back(op);
      if (s.running < 0) start_kernel(cls, now, from);
      return;
    case OpKind::MemCopy: {
      const double start = std::max(now, s.copy_free);
      bind(cls, op, s.copy_free > now ? Binder{cls, s.last_copy} : from);
      s.last_copy = op;
      s.copy_free = start + s.summary->kernels[state.info].seconds;
      push(s.copy_free, EventKind::OpDone, cls, op);
      if (options_.trace) s.cost.spans.push_back({op, sc_core::sc_time(start, sc_core::SC_SEC), sc_core::sc_time(s.copy_free, sc_core::SC_SEC)});
      return;
    }
    default:
      break;
  }
  const Communication& c = s.communication[state.info];
  prefetch(s.communication, state.info + 2);
  s.activity.change(now, 0, 1, c.cause);
  if (state.kind == OpKind::Collective) collective_joined(cls, op, c, now);
  else if (state.kind == OpKind::Send) send(cls, op, c, now);
  else receive(cls, op, c, now);
}

void Walk::collective_joined(int cls, uint32_t op, const Communication& c, double now) {
  RankState& s = ranks_[size_t(cls)];
  s.cost.bytes_sent += c.bytes;
  s.cost.bytes_received += c.bytes;
  // This member's kernels hold their SMs from the end of the launch until the call is done.
  push(now + c.delay, EventKind::SmsAcquired, cls, op);
  if (group_size_[size_t(c.peer)] == 1) {  // its members are all equivalent to this one
    bind(cls, op, ready_binder(cls, op));
    push(now + c.seconds, EventKind::OpDone, cls, op);
    return;
  }
  const std::pair<int, uint32_t> key{c.peer, c.sequence};
  Gathering& gathering = gathering_[key];
  gathering.expected = group_size_[size_t(c.peer)];
  if (gathering.members.empty() || now >= gathering.ready) gathering.last = Binder{cls, op};
  gathering.ready = std::max(gathering.ready, now);
  gathering.members.emplace_back(cls, op);
  if (++gathering.arrived < gathering.expected) return;
  const double end = gathering.ready + c.seconds;
  const Binder joined_last = ready_binder(gathering.last.cls, gathering.last.op);
  for (const auto& [mc, mo] : gathering.members) {
    bind(mc, mo, joined_last);
    push(end, EventKind::OpDone, mc, mo);
  }
  gathering_.erase(key);
}

void Walk::send(int cls, uint32_t op, const Communication& c, double now) {
  RankState& s = ranks_[size_t(cls)];
  s.cost.bytes_sent += c.bytes;
  push(now + c.seconds, EventKind::OpDone, cls, op);
  bind(cls, op, ready_binder(cls, op));
  const MessageKey key{cls, c.peer, c.tag, c.sequence};
  const double arrival = now + c.seconds + c.delay;
  auto waiting = posted_.find(key);
  if (waiting == posted_.end()) {
    sent_[key] = Sent{arrival, now, Binder{cls, op}};
    return;
  }
  const Posted posted = waiting->second;
  bind(posted.cls, posted.op, arrival > posted.at ? ready_binder(cls, op) : ready_binder(posted.cls, posted.op));
  push(std::max(posted.at, arrival), EventKind::OpDone, posted.cls, posted.op);
  posted_.erase(waiting);
}

void Walk::receive(int cls, uint32_t op, const Communication& c, double now) {
  RankState& s = ranks_[size_t(cls)];
  s.cost.bytes_received += c.bytes;
  const MessageKey key{c.peer, cls, c.tag, c.sequence};
  auto arrived = sent_.find(key);
  if (arrived != sent_.end()) {
    const Sent& m = arrived->second;
    bind(cls, op, m.arrival > now ? ready_binder(m.send.cls, m.send.op) : ready_binder(cls, op));
    push(std::max(now, m.arrival), EventKind::OpDone, cls, op);
    sent_.erase(arrived);
    return;
  }
  posted_[key] = Posted{cls, op, now};
}

void Walk::start_kernel(int cls, double now, Binder waited_for) {
  RankState& s = ranks_[size_t(cls)];
  if (s.queue.empty()) return;
  const uint32_t op = s.queue.front();
  s.queue.pop_front();
  bind(cls, op, waited_for);
  const KernelRun& run = s.run(op);
  s.running = op;
  s.remaining = run.seconds;
  s.progress_at = s.member_start = now;
  s.member = 0;
  s.member_work = 0;
  s.activity.change(now, 1, 0, run.cause);
  kernel_ends(cls, now + s.remaining / s.share);
}

void Walk::kernel_done(int cls, double now) {
  RankState& s = ranks_[size_t(cls)];
  const uint32_t first = uint32_t(s.running);
  const KernelRun& run = s.run(first);
  progress(cls, run.seconds - s.remaining, run.seconds, now, true);
  s.activity.change(now, -1, 0, run.cause);
  const uint32_t op = first + run.count - 1;
  s.running = -1;
  start_kernel(cls, now, Binder{cls, op});  // (moves this class's entry in kernel_ends_)
  if (s.running < 0) kernel_ends_.erase(uint32_t(cls));
  op_done(cls, op, now);
}

// The running run went from `from` to `to` of its work (idle-GPU seconds) between
// `progress_at` and `now`, at one share of the SMs: that time goes to its members in
// proportion to the work each did in it (to their compute causes), and those whose work is
// all done end, at the time their last work was (the run's last member only when `last`).
void Walk::progress(int cls, double from, double to, double now, bool last) {
  RankState& s = ranks_[size_t(cls)];
  const uint32_t first = uint32_t(s.running);
  const KernelRun& run = s.run(first);
  const double span = to - from, wall = now - s.progress_at;
  for (; s.member < run.count; ++s.member) {
    const KernelSummary& k = s.summary->kernels[s.summary->members[run.first + s.member]];
    const double end = s.member_work + k.seconds;  // (added as the run's seconds were)
    const double work = std::min(end, to) - std::max(s.member_work, from);
    const double elapsed = work >= span ? wall : span > 0 ? wall * (work / span) : 0.0;
    s.cost.compute_by_cause[size_t(k.compute_cause)] += elapsed * (1 - k.host_share);
    s.cost.compute_by_cause[size_t(models::ComputeCause::Framework)] += elapsed * k.host_share;
    const bool final_member = s.member + 1 == run.count;
    if (final_member ? !last : end > to) break;
    const double at = final_member ? now : span > 0 ? s.progress_at + wall * ((end - from) / span) : now;
    member_done(cls, first + s.member, s.member_start, at);
    s.member_start = at;
    s.member_work = end;
  }
  s.progress_at = now;
}

// A kernel of a run ends (the run's last, op_done after it): its span and critical-path end;
// a member before the last is done here, as nothing but the next member waits for it.
void Walk::member_done(int cls, uint32_t op, double start, double end) {
  RankState& s = ranks_[size_t(cls)];
  if (options_.trace) s.cost.spans.push_back({op, sc_core::sc_time(start, sc_core::SC_SEC), sc_core::sc_time(end, sc_core::SC_SEC)});
  if (op == uint32_t(s.running) + s.run(uint32_t(s.running)).count - 1) return;
  ++s.done;
  s.waits[op] = kDone;
  if (tracking_) {
    s.end[op] = end;
    s.ready_by[op + 1] = s.bound_by[op + 1] = Binder{cls, op};
  }
}

// Collectives hold `sms` of the GPU's SMs: a running kernel goes on at the share left.
void Walk::set_sms(int cls, int delta, double now) {
  RankState& s = ranks_[size_t(cls)];
  s.sms += delta;
  const double share = std::clamp(double(std::max(0, sm_count_ - s.sms)) / sm_count_, 1e-3, 1.0);
  if (share == s.share) return;
  if (s.running >= 0) {
    const double seconds = s.run(uint32_t(s.running)).seconds, from = seconds - s.remaining;
    s.remaining = std::max(0.0, s.remaining - (now - s.progress_at) * s.share);
    progress(cls, from, seconds - s.remaining, now, false);  // (sets progress_at)
    kernel_ends(cls, now + s.remaining / share);
  }
  s.share = share;
}

void Walk::op_done(int cls, uint32_t op, double now) {
  RankState& s = ranks_[size_t(cls)];
  const OpInfo& state = s.op[op];
  if (state.kind == OpKind::Collective || state.kind == OpKind::Send || state.kind == OpKind::Recv) {
    const Communication& c = s.communication[state.info];
    s.activity.change(now, 0, -1, c.cause);
    if (state.kind == OpKind::Collective) set_sms(cls, -c.channels, now);
  }
  ++s.done;
  s.waits[op] = kDone;
  if (tracking_) {
    s.end[op] = now;
    if (last_op_.cls < 0 || now >= ranks_[size_t(last_op_.cls)].end[last_op_.op]) last_op_ = Binder{cls, op};
  }
  s.cost.finish_s = std::max(s.cost.finish_s, now);
  const std::vector<uint32_t>& successors = s.summary->graph->successors;
  prefetch(s.summary->ops, op + kAhead);
  prefetch(s.waits, op + kAhead);
  prefetch(successors, state.successors + kAhead);
  // Successors that become ready now start now (no event: the time does not move).
  for (uint32_t k = state.successors, last = s.op[op + 1].successors; k < last; ++k)
    if (--s.waits[successors[k]] == 0) ready(cls, successors[k], now, Binder{cls, op});
}

AnalyticResult Walk::run() {
  ranks_.resize(size_t(classes_.count()));
  kernel_ends_ = KeyedQueue(size_t(classes_.count()));
  group_of_communicator_.assign(job_.communicators.size(), -1);
  for (const workloads::Communicator& c : job_.communicators) communicator_causes_.push_back(models::communicator_cause(c.name));
  summarize_all();
  while (!events_.empty() || !kernel_ends_.empty()) {
    ++steps_;
    if (!kernel_ends_.empty() && (events_.empty() || earlier(kernel_ends_.top(), events_.top()))) {
      const KeyedQueue::Entry k = kernel_ends_.top();
      kernel_done(int(k.key), k.time);
      continue;
    }
    const Event e = events_.top();
    events_.pop();
    switch (e.kind) {
      case EventKind::Ready: ready(e.cls, e.op, e.time); break;
      case EventKind::OpDone: op_done(e.cls, e.op, e.time); break;
      case EventKind::SmsAcquired: {
        const RankState& s = ranks_[size_t(e.cls)];
        set_sms(e.cls, s.communication[s.op[e.op].info].channels, e.time);
        break;
      }
    }
  }
  return collect();
}

// Each distinct program's dependency graph and summary, then each class's state: side by side
// on the machine's cores, each thread with costs of its own (the first the walk's), the
// programs and then the classes dealt out in turn.
void Walk::summarize_all() {
  std::unordered_map<const workloads::Program*, size_t> index;  // program -> its place below
  std::vector<int> first_class;                                   // by program: the first class running it
  std::vector<size_t> program_of_class(size_t(classes_.count()));
  for (int c = 0; c < classes_.count(); ++c) {
    const workloads::Program* program = job_.ranks[size_t(classes_.representative[size_t(c)])].program.get();
    const auto [it, added] = index.emplace(program, first_class.size());
    if (added) first_class.push_back(c);
    program_of_class[size_t(c)] = it->second;
  }
  const size_t programs = first_class.size();
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, programs);
  std::vector<std::unique_ptr<OpCosts>> more(threads - 1);
  auto costs_of = [&](size_t t) -> OpCosts& { return t == 0 ? costs_ : *more[t - 1]; };
  std::vector<std::shared_ptr<const ProgramSummary>> summaries(programs);
  workloads::parallel_for(int(threads), [&](int t) {
    if (t > 0) more[size_t(t) - 1] = std::make_unique<OpCosts>(platform_, topology_, job_, options_.costs);
    for (size_t p = size_t(t); p < programs; p += threads) {
      const workloads::Rank& rank = job_.ranks[size_t(classes_.representative[size_t(first_class[p])])];
      summaries[p] = summarize(rank, std::make_shared<models::ProgramGraph>(*rank.program), options_.kernel_runs,
                               costs_of(size_t(t)));
    }
  }, int(threads));
  for (int c = 0; c < classes_.count(); ++c) ranks_[size_t(c)].summary = summaries[program_of_class[size_t(c)]];
  workloads::parallel_for(int(threads), [&](int t) {
    for (size_t c = size_t(t); c < size_t(classes_.count()); c += threads) init_rank(int(c), costs_of(size_t(t)));
  }, int(threads));
  for (int c = 0; c < classes_.count(); ++c) start_rank(c);
}

std::string Walk::describe_stuck() const {
  std::string out;
  int shown = 0;
  for (const RankState& s : ranks_) {
    const auto& ops = s.rank->program->ops;
    if (s.done == ops.size() || ++shown > 8) continue;
    std::string line = "rank " + std::to_string(s.rank->rank) + ":";
    std::vector<bool> seen(job_.stream_names.size(), false);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (s.waits[i] == kDone || seen[ops[i].stream]) continue;
      seen[ops[i].stream] = true;
      line += " [" + job_.stream_names[ops[i].stream] + "] op " + std::to_string(i) + " " +
              workloads::to_string(ops[i].kind) + " " + job_.op_name(ops[i]);
    }
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

std::shared_ptr<const ProgramSummary> Walk::summarize(const workloads::Rank& rank,
                                                     std::shared_ptr<const models::ProgramGraph> graph_of_program,
                                                     bool runs, OpCosts& costs) const {
  const auto& ops = rank.program->ops;
  auto summary = std::make_shared<ProgramSummary>();
  summary->graph = graph_of_program;
  const models::ProgramGraph& graph = *summary->graph;
  summary->ops.resize(ops.size() + 1);
  summary->ops.back().successors = graph.successor_begin.back();
  RunTable table(*summary);
  // Each distinct (kernel work, cause) is summarised once: its index by work id and cause.
  std::vector<uint32_t> kernel_of;
  uint32_t head = 0, tail = UINT32_MAX;  // the run being built: its first and last op
  const uint16_t no_stream = UINT16_MAX;
  uint16_t compute_stream = no_stream;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const workloads::Op& op = ops[i];
    OpInfo& u = summary->ops[i];
    u.successors = graph.successor_begin[i];
    u.kind = op.kind;
    if (op.kind == OpKind::MemCopy) {
      u.info = static_cast<uint32_t>(summary->kernels.size());
      summary->kernels.push_back(KernelSummary{costs.copy(rank, i), 0, models::TimeCause::Compute, models::ComputeCause::Gemm});
      continue;
    }
    if (op.kind != OpKind::Compute) {
      u.info = static_cast<uint32_t>(summary->communication.size());
      summary->communication.push_back(i);
      continue;
    }
    if (compute_stream == no_stream) compute_stream = op.stream;
    if (runs && op.stream != compute_stream) return summarize(rank, std::move(graph_of_program), false, costs);
    const uint32_t work = costs.compute(rank, i);
    const models::TimeCause cause = models::compute_cause(op.phase);
    const size_t key = size_t(work) * models::kTimeCauses + size_t(cause);
    if (key >= kernel_of.size()) kernel_of.resize(key + 1, UINT32_MAX);
    if (kernel_of[key] == UINT32_MAX) {
      const models::KernelTime& t = costs.kernel_time(work);
      kernel_of[key] = static_cast<uint32_t>(summary->kernels.size());
      summary->kernels.push_back(KernelSummary{t.total(), t.total() > 0 ? t.host_s / t.total() : 0, cause,
                                               models::cause_of_kernel(static_cast<uint8_t>(op.kernel))});
    }
    const uint32_t kernel = kernel_of[key];
    const uint32_t tail_successors = tail != UINT32_MAX && tail + 1 == i ? graph.successor_begin[i] - graph.successor_begin[tail] : 0;
    if (runs && tail_successors == 1 && graph.successors[graph.successor_begin[tail]] == i && graph.waits[i] == 1 &&
        summary->runs[summary->ops[head].info].cause == cause) {
      summary->ops[head].info = table.extend(summary->ops[head].info, kernel);
    } else {
      head = i;
      u.info = table.single(kernel);
    }
    tail = i;
  }
  return summary;
}

std::vector<PathSegment> Walk::critical_path() const {
  std::vector<PathSegment> path;
  for (Binder b = last_op_; b.cls >= 0;) {
    const RankState& s = ranks_[size_t(b.cls)];
    const Binder before = s.bound_by[b.op];
    const double start = before.cls >= 0 ? ranks_[size_t(before.cls)].end[before.op] : 0.0;
    path.push_back(PathSegment{s.rank->rank, b.op, start, s.end[b.op]});
    b = before;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

AnalyticResult Walk::collect() {
  AnalyticResult r;
  r.classes = classes_.count();
  r.steps = steps_;
  for (const RankState& s : ranks_) {
    r.iteration_time_s = std::max(r.iteration_time_s, s.cost.finish_s);
    if (s.done != s.rank->program->ops.size()) r.deadlocked = true;
  }
  if (r.deadlocked) r.deadlock = describe_stuck();
  else if (tracking_) r.critical_path = critical_path();
  for (RankState& s : ranks_) {
    s.activity.change(r.iteration_time_s, 0, 0, models::TimeCause::Idle);
    s.activity.causes.close(r.iteration_time_s);
    s.cost.time_by_cause = s.activity.causes.seconds();
    s.cost.cause_spans = s.activity.causes.spans();
    s.cost.compute_s = s.activity.compute;
    s.cost.exposed_communication_s = s.activity.exposed;
    s.cost.overlapped_communication_s = s.activity.overlapped;
    s.cost.idle_s = s.activity.idle;
    s.cost.ops = s.done;
  }
  r.ranks.resize(job_.ranks.size());
  for (size_t k = 0; k < job_.ranks.size(); ++k) {
    r.ranks[k] = ranks_[size_t(classes_.of_rank[k])].cost;
    r.ranks[k].rank = static_cast<int>(k);
  }
  return r;
}

}  // namespace

AnalyticResult cost_iteration(const platforms::PlatformConfig& platform,
                              const platforms::RoutedTopology& topology, const workloads::Job& job,
                              const AnalyticOptions& options) {
  Walk walk(platform, topology, job, options);
  return walk.run();
}

}  // namespace tessera::analytic

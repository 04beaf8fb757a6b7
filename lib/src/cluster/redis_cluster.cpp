// The Redis adapter's client thread: rules in force → leases, heartbeats, failure and recovery.
#include <floodgate/cluster/redis_cluster.hpp>

#include "cluster/lease_planner.hpp"
#include "cluster/lease_scripts.hpp"
#include "cluster/redis_router.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace floodgate::cluster {

namespace {

using detail::lease_planner;
using detail::redis_router;
using detail::redis_result;

constexpr std::int64_t heartbeat_ms = 1000;
constexpr std::int64_t liveness_ms = 500;
constexpr std::int64_t instance_ttl_ms = 3000;
constexpr std::int64_t first_backoff_ms = 50;
constexpr std::int64_t max_backoff_ms = 1000;
constexpr std::array<double, 8> round_trip_bounds = {0.0005, 0.001, 0.002, 0.005,
                                                     0.01,   0.02,  0.05,  0.1};

std::string default_instance_id() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + std::to_string(rd() % 100000);
}

/// Hash tags keep a rule on one slot; braces inside resource names would cut the tag short.
std::string tag_safe(std::string s) {
  std::replace(s.begin(), s.end(), '{', '(');
  std::replace(s.begin(), s.end(), '}', ')');
  return s;
}

std::string rule_label(const flow_rule& r, std::int32_t index) {
  return r.name.empty() ? "flow[" + std::to_string(index) + "]" : r.name;
}

/** Reads the lease script's reply to `ask` into `reply`: five integers, each within what the
    script can return. Returns what is wrong with it, empty when nothing is; a reply of another
    shape is the store failing (the rule falls back), never a grant of nothing. */
std::string read_lease_reply(const detail::redis_value& value, const detail::lease_ask& ask,
                             detail::lease_reply& reply) {
  const auto* items = value.array();
  std::int64_t* fields[] = {&reply.granted, &reply.bucket, &reply.left_ms, &reply.retry_ms,
                            &reply.short_ms};
  if (items == nullptr || items->size() != std::size(fields)) {
    return "unexpected reply to the lease script: not an array of 5";
  }
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    const auto* v = (*items)[i].integer();
    if (v == nullptr) {
      return "unexpected reply to the lease script: item " + std::to_string(i + 1) +
             " is not an integer";
    }
    *fields[i] = *v;
  }
  if (std::string why = detail::implausible(reply, ask); !why.empty()) {
    return "unexpected reply to the lease script: " + why;
  }
  return {};
}

/// A rule followed by the thread.
struct tracked_rule {
  flow_rule rule;
  std::int32_t index = 0;
  std::shared_ptr<cluster_lease> lease;
  lease_planner planner;
  /// Passes spent under planners this rule had before (a changed cluster: section starts new ones).
  std::uint64_t spent_before = 0;
  std::string key;
  std::string last_error;

  std::uint64_t spent() const noexcept { return spent_before + planner.spent(); }

  /// Cumulative passes at one moment: spent from leases, and admitted by the local limit.
  struct sample {
    std::int64_t ms = 0;
    std::uint64_t leased = 0;
    std::uint64_t outside = 0;
  };
  /// Samples of the last window and a little more (one every sample_ms at most), oldest first.
  std::deque<sample> history;
  static constexpr std::int64_t sample_ms = 20;
  /// The fallback passes (lease->fallback_passes()) already recorded in Redis.
  std::uint64_t carried_upto = 0;
  /// When the Redis node of this rule's key last answered (a lease request or a PING).
  std::int64_t last_answer_ms = 0;
  /// When the rule last left the global limit for a fallback.
  std::int64_t fell_back_ms = 0;

  sample now_sample(std::int64_t now) const {
    return {now, spent_before + planner.spent_with(*lease), lease->fallback_passes()};
  }
  /// Records the counts at `now` (at most one sample every sample_ms), forgetting what is
  /// older than a window before the oldest sample still needed.
  void track(std::int64_t now) {
    if (history.empty() || now - history.back().ms >= sample_ms) history.push_back(now_sample(now));
    while (history.size() > 1 && history[1].ms <= now - lease_planner::window_ms) {
      history.pop_front();
    }
  }
  /** The counts of the window ending at `now`: current counts minus those of the last sample at
      or before its start (an older sample counts more, which errs towards fewer passes). */
  sample last_window(std::int64_t now) const {
    const sample cur = now_sample(now);
    const sample* since = history.empty() ? &cur : &history.front();
    for (const sample& s : history) {
      if (s.ms > now - lease_planner::window_ms) break;
      since = &s;
    }
    return {now, cur.leased - std::min(cur.leased, since->leased),
            cur.outside - std::min(cur.outside, since->outside)};
  }
};

}  // namespace

class redis_cluster::impl {
 public:
  impl(engine& eng, redis_cluster_options options)
      : engine_(eng), options_(std::move(options)) {
    if (options_.instance_id.empty()) options_.instance_id = default_instance_id();
    thread_ = std::thread([this] { run(); });
  }

  ~impl() {
    {
      std::lock_guard lock(wake_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  redis_cluster_status status() const {
    std::lock_guard lock(status_mutex_);
    return status_;
  }

 private:
  void run() {
    std::unique_lock wake(wake_mutex_);
    while (!stop_) {
      wake.unlock();
      step();
      publish();
      wake.lock();
      wake_.wait_for(wake, rules_.empty() ? std::chrono::milliseconds(20) : options_.tick,
                     [this] { return stop_; });
    }
  }

  const clock& time() const { return engine_.time(); }
  /// A fresh reading of the engine's clock (now_ms() may be a tick old on a busy machine).
  std::int64_t now_ms() const { return engine_.time().now_ns() / 1'000'000; }

  void step() {
    follow_rules();
    if (rules_.empty()) {
      router_.close();
      state_ = "idle";
      reported_down_ = false;  // nothing falls back; the next failure is told anew
      return;
    }
    const std::int64_t now = now_ms();
    for (tracked_rule& r : rules_) {
      r.track(now);
      if (r.lease->mode() == cluster_mode::fallback_local) set_debt(r, now);
    }
    if (!router_.connected()) {
      if (now < next_connect_ms_) return;
      if (!connect()) {
        fail(last_error_, false);
        return;
      }
      connected_since_ms_ = now_ms();
      next_heartbeat_ms_ = 0;
      for (tracked_rule& r : rules_) r.last_answer_ms = now;
    }
    if (now >= next_heartbeat_ms_ && !heartbeat()) return;
    for (tracked_rule& r : rules_) {
      if (!serve(r)) return;
    }
    ping_quiet_rules();
    tell_recovery();
  }

  /// Redis answered for rule `r` (null: for the namespace's key, the heartbeat's): a standalone
  /// Redis answers for every rule; a Redis Cluster node for the rules whose key it holds.
  void answered(tracked_rule* r) {
    const std::int64_t now = now_ms();
    if (!router_.is_cluster()) {
      for (tracked_rule& t : rules_) t.last_answer_ms = now;
    } else if (r != nullptr) {
      r->last_answer_ms = now;
    }
  }

  /** A rule whose Redis node answered nothing for liveness_ms (it waits for a full window to
      free, up to a second) gets a PING to that node, so that a node gone is noticed within a
      second (SPEC §10: half a second plus timeoutMs), not only at the next heartbeat or lease
      request. One PING serves every rule of a standalone Redis; in a Redis Cluster each rule's
      master is asked. */
  void ping_quiet_rules() {
    const std::int64_t now = now_ms();
    bool answered = false;
    for (tracked_rule& r : rules_) {
      if (now - r.last_answer_ms < liveness_ms) continue;
      if (!answered || router_.is_cluster()) {
        ++commands_;
        const redis_result res = router_.command(r.key, {"PING"});
        if (!res.ok()) {
          fail("PING: " + res.error, res.timeout);
          return;
        }
        answered = true;
      }
      r.last_answer_ms = now;
    }
  }

  /// Picks up the rules in force when their version changes; unchanged leases keep planners.
  void follow_rules() {
    const std::uint64_t version = engine_.rules_version();
    if (version == version_) return;
    version_ = version;
    const rule_set rules = engine_.rules();
    cluster_config config = rules.cluster.value_or(cluster_config{});
    if (config.redis.empty() && !options_.default_redis.empty()) {
      config.redis.push_back(options_.default_redis);
    }
    if (!(config == config_)) {
      config_ = config;
      router_.close();  // a changed section reconnects
      next_connect_ms_ = 0;
      backoff_ms_ = first_backoff_ms;
      connected_since_ms_ = -1;
      redis_cluster_ = false;
      live_ = fleet_ = 1;  // another Redis or namespace: another fleet
      live_known_ = false;
      reported_down_ = false;  // another Redis: its first failure is told
      // Leases, windows and errors of the old Redis mean nothing to the new one.
      for (tracked_rule& t : rules_) {
        t.lease->revoke();
        t.spent_before = t.spent();
        t.planner = lease_planner();
        t.last_error.clear();
      }
    }
    std::vector<tracked_rule> next;
    engine_.for_each_cluster_rule(
        [&](const flow_rule& rule, std::int32_t index, const std::shared_ptr<cluster_lease>& l) {
          const auto same = std::find_if(rules_.begin(), rules_.end(),
                                         [&](const tracked_rule& t) { return t.lease == l; });
          if (same != rules_.end()) {
            same->index = index;
            same->key = key_of(rule);
            next.push_back(std::move(*same));
            return;
          }
          tracked_rule t;
          t.last_answer_ms = now_ms();
          t.rule = rule;
          t.index = index;
          t.lease = l;
          t.key = key_of(rule);
          if (!router_.connected() && state_ == "down") {
            enter_fallback(t);
          }
          next.push_back(std::move(t));
        });
    rules_ = std::move(next);
    // The spent series of labels no longer in force end (a label used again starts anew).
    std::erase_if(spent_series_, [&](const auto& entry) {
      return std::none_of(rules_.begin(), rules_.end(), [&](const tracked_rule& t) {
        return t.rule.resource == entry.first.first &&
               rule_label(t.rule, t.index) == entry.first.second;
      });
    });
  }

  /// The rule's window hash; the hash tag keeps it on one Redis Cluster slot.
  std::string key_of(const flow_rule& rule) const {
    return "{" + config_.name_space + ":" + tag_safe(rule.resource) + ":" +
           tag_safe(rule.limit_app) + "}:window";
  }

  bool connect() {
    state_ = "connecting";
    if (config_.redis.empty()) {
      last_error_ = "no Redis endpoint: cluster.redis is empty and no default was given";
      return false;
    }
    std::vector<redis_endpoint> seeds;
    for (const std::string& url : config_.redis) {
      std::string why;
      if (auto e = parse_redis_url(url, why)) seeds.push_back(*e);
    }
    ++commands_;
    last_error_ = router_.connect(seeds, std::chrono::milliseconds(config_.timeout_ms));
    if (!last_error_.empty()) return false;
    redis_cluster_ = router_.is_cluster();
    state_ = "connected";
    return true;
  }

  /** Runs a script by digest. On NOSCRIPT (a restart, SCRIPT FLUSH, or in a slot migration
      the ASK target, which never saw it) loads it on the node that said so and runs it again;
      EVAL when it cannot be loaded. */
  redis_result eval(std::string_view script, std::string& sha, std::string_view key,
                    const std::vector<std::string_view>& args) {
    auto call = [&](std::string_view verb, std::string_view body) {
      std::vector<std::string_view> all{verb, body, "1", key};
      all.insert(all.end(), args.begin(), args.end());
      ++commands_;
      return router_.command(key, all);
    };
    redis_result loaded;
    auto load = [&](const std::string& node) {  // on the key's owner when `node` is empty
      const std::vector<std::string_view> load_args{"SCRIPT", "LOAD", script};
      ++commands_;
      loaded = node.empty() ? router_.command(key, load_args) : router_.command_at(node, load_args);
      const auto* s = std::get_if<std::string>(&loaded.value.v);
      if (!loaded.ok() || s == nullptr) return false;
      sha = *s;
      return true;
    };
    // Without the script, EVAL; unless the connection failed, which is the error to report.
    auto unloaded = [&] { return loaded.io ? loaded : call("EVAL", script); };
    auto missing = [](const redis_result& r) {
      return !r.ok() && !r.io && r.error.starts_with("NOSCRIPT");
    };
    if (sha.empty() && !load({})) return unloaded();
    redis_result r = call("EVALSHA", sha);
    if (!missing(r)) return r;
    if (!load(r.node)) return unloaded();
    r = call("EVALSHA", sha);
    return missing(r) ? call("EVAL", script) : r;
  }

  bool heartbeat() {
    const std::string key = "{" + config_.name_space + "}:instances";
    const std::string ttl = std::to_string(instance_ttl_ms);
    const redis_result r =
        eval(detail::heartbeat_script, heartbeat_sha_, key, {options_.instance_id, ttl});
    if (!r.ok()) {
      fail("heartbeat: " + r.error, r.timeout);
      return false;
    }
    if (const auto* n = r.value.integer(); n != nullptr && *n > 0) {
      // After an outage longer than the heartbeats' expiry, the instances announce themselves
      // again one by one: until every one has had instance_ttl_ms to, a smaller count is a
      // census under way, not instances gone. Taken at face value it made the first instance
      // back believe it was alone, and a second outage then gave it the whole count.
      const bool census_done =
          connected_since_ms_ >= 0 && now_ms() - connected_since_ms_ >= instance_ttl_ms;
      live_ = *n;  // avg_local's limit takes the count as it is (fewer: errs towards fewer)
      if (*n > fleet_ || census_done) fleet_ = *n;
      if (census_done) live_known_ = true;
    }
    answered(nullptr);
    next_heartbeat_ms_ = now_ms() + heartbeat_ms;
    return true;
  }

  double limit_of(const tracked_rule& r) const {
    const bool avg = r.rule.cluster_config.threshold_type == cluster_threshold_type::avg_local;
    return avg ? r.rule.count * static_cast<double>(live_) : r.rule.count;
  }

  double fallback_count_of(const tracked_rule& r) const {
    const auto& c = r.rule.cluster_config;
    if (c.fallback_count) return *c.fallback_count;
    if (c.threshold_type == cluster_threshold_type::avg_local) return r.rule.count;
    // Never the whole count per instance: a fleet of N would admit N times it. An instance that
    // has not heard from Redis yet (it started during the outage) cannot know its fleet; a rule
    // shared across instances has at least two.
    return std::max(1.0, std::floor(r.rule.count / static_cast<double>(fleet())));
  }

  /// The live instances the fallbacks divide by: at least two until a whole census counted them.
  std::int64_t fleet() const noexcept {
    return std::max<std::int64_t>(fleet_, live_known_ ? 1 : 2);
  }

  /// The passes this instance leased in the last window count against its local limit.
  static void set_debt(tracked_rule& r, std::int64_t now) {
    const std::uint64_t leased = r.last_window(now).leased;
    r.lease->set_fallback_debt(static_cast<std::uint32_t>(
        std::min<std::uint64_t>(leased, std::numeric_limits<std::uint32_t>::max())));
  }

  void enter_fallback(tracked_rule& r) {
    if (r.lease->mode() == cluster_mode::global) r.fell_back_ms = now_ms();
    set_debt(r, now_ms());
    if (r.rule.cluster_config.fallback_to_local_when_fail) {
      r.lease->set_mode(cluster_mode::fallback_local, fallback_count_of(r));
    } else {
      r.lease->set_mode(cluster_mode::fallback_pass);
    }
  }

  /// Asks for the rule's next lease when its planner says so. False when Redis failed.
  bool serve(tracked_rule& r) {
    const std::int64_t sent = now_ms();
    const double limit = limit_of(r);
    const auto ask = r.planner.plan(*r.lease, sent, limit);
    if (!ask) return true;
    // Back from a fallback: what its local limit admitted in the last window, which Redis never
    // saw, is recorded before any grant — each pass once (a request that failed is sent again,
    // which errs towards fewer), including those admitted while this very request was under way.
    const std::uint64_t fallback_now = r.lease->fallback_passes();
    const std::uint64_t carry = std::min(r.last_window(sent).outside,
                                         fallback_now - std::min(fallback_now, r.carried_upto));
    // And what the other instances' fallbacks may have let through, which Redis hears of only
    // as each comes back: the first instance back would otherwise be granted the whole count
    // less its own carry, on top of theirs (an audit: 166 passes in a window against 100).
    // The script records it only if nobody was granted passes while this instance was away.
    const std::int64_t others =
        r.lease->mode() == cluster_mode::fallback_local
            ? (fleet() - 1) * static_cast<std::int64_t>(fallback_count_of(r))
            : 0;
    const std::string args[] = {r.key,
                                std::to_string(static_cast<std::int64_t>(limit)),
                                std::to_string(ask->asked),
                                std::to_string(ask->returned),
                                std::to_string(ask->returned_bucket),
                                std::to_string(lease_planner::bucket_ms),
                                std::to_string(lease_planner::buckets),
                                ask->speculative ? "1" : "0",
                                std::to_string(carry),
                                std::to_string(others),
                                std::to_string(sent - r.fell_back_ms)};
    const auto started = std::chrono::steady_clock::now();
    const redis_result res = eval(detail::lease_script, lease_sha_, args[0],
                                  {args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                                   args[8], args[9], args[10]});
    observe_round_trip(std::chrono::steady_clock::now() - started);
    detail::lease_reply reply;
    std::string why = res.ok() ? read_lease_reply(res.value, *ask, reply) : res.error;
    if (!why.empty()) {
      r.last_error = why;
      r.planner.on_failure(*ask);
      ++results_[static_cast<std::size_t>(res.timeout ? lease_result::timeout
                                                      : lease_result::error)];
      fail(why, res.timeout);
      return false;
    }
    r.planner.on_reply(*r.lease, *ask, reply, sent);
    r.carried_upto = fallback_now;
    answered(&r);
    ++results_[static_cast<std::size_t>(reply.granted > 0 ? lease_result::granted
                                                          : lease_result::exhausted)];
    r.last_error.clear();
    if (r.lease->mode() != cluster_mode::global) r.lease->set_mode(cluster_mode::global);
    return true;
  }

  /** Tells on_event that Redis answers again once every rule is back on its shared limit: in a
      Redis Cluster with one master down, a rule on another master succeeds before that one
      fails again, and telling each reconnect would say "answers again" twice a second. */
  void tell_recovery() {
    if (!reported_down_) return;
    for (const tracked_rule& r : rules_) {
      if (r.lease->mode() != cluster_mode::global) return;
    }
    reported_down_ = false;
    tell("Redis answers again: clusterMode rules are back on their shared limits");
  }

  void tell(const std::string& event) const {
    if (options_.on_event) options_.on_event(event);
  }

  /// Redis failed: every rule falls back until a lease request succeeds again.
  void fail(const std::string& why, bool) {
    if (!reported_down_) {
      reported_down_ = true;
      tell("Redis failed (" + why + "): clusterMode rules fall back until it answers");
    }
    last_error_ = why;
    state_ = "down";
    router_.close();
    schedule_reconnect();
    for (tracked_rule& r : rules_) {
      if (r.last_error.empty()) r.last_error = why;
      enter_fallback(r);
    }
  }

  /** The next connection attempt, backoff_ms_ from now, and the backoff after it twice as long
      (up to max_backoff_ms). A connection that served for max_backoff_ms starts the backoff
      over; one that failed sooner keeps doubling it: in a Redis Cluster whose seed answers while
      a rule's master is down, every connect succeeds and the first lease request fails, and
      reconnecting at once made hundreds of CLUSTER SLOTS a second. */
  void schedule_reconnect() {
    const std::int64_t now = now_ms();
    if (connected_since_ms_ >= 0 && now - connected_since_ms_ >= max_backoff_ms) {
      backoff_ms_ = first_backoff_ms;
    }
    connected_since_ms_ = -1;
    next_connect_ms_ = now + backoff_ms_;
    backoff_ms_ = std::min(max_backoff_ms, backoff_ms_ * 2);
  }

  void observe_round_trip(std::chrono::steady_clock::duration d) {
    const double s = std::chrono::duration<double>(d).count();
    round_trip_sum_ += s;
    ++round_trips_;
    for (std::size_t i = 0; i < round_trip_bounds.size(); ++i) {
      if (s <= round_trip_bounds[i]) ++round_trip_counts_[i];
    }
  }

  /** What the spent series of (resource, label) reads, `own` being what the rule now under that
      label spent: never less than it read before. A changed rule under a label, or a kept one
      whose label moved (an unnamed rule whose place changed), continues from there (SPEC §6:
      counters are monotonic). */
  std::uint64_t spent_of(const std::string& resource, const std::string& label, std::uint64_t own) {
    spent_series& series = spent_series_[{resource, label}];
    if (series.offset + own < series.last) series.offset = series.last - own;
    series.last = series.offset + own;
    return series.last;
  }

  void publish() {
    redis_cluster_status s;
    s.endpoints = config_.redis;
    s.state = state_;
    s.redis_cluster = redis_cluster_;
    s.last_error = last_error_;
    s.live_instances = fleet();  // as the fallback counts divide by it
    s.lease_requests = results_;
    s.round_trip_bounds.assign(round_trip_bounds.begin(), round_trip_bounds.end());
    s.round_trip_buckets.assign(round_trip_counts_.begin(), round_trip_counts_.end());
    s.round_trip_sum_seconds = round_trip_sum_;
    s.round_trips = round_trips_;
    s.commands = commands_;
    for (const tracked_rule& r : rules_) {
      std::string label = rule_label(r.rule, r.index);
      const std::uint64_t spent = spent_of(r.rule.resource, label, r.spent());
      s.rules.push_back({r.rule.resource, std::move(label), r.lease->mode(), limit_of(r),
                         fallback_count_of(r), r.lease->available(), spent, r.last_error});
    }
    std::lock_guard lock(status_mutex_);
    status_ = std::move(s);
  }

  engine& engine_;
  redis_cluster_options options_;
  redis_router router_;
  cluster_config config_;
  std::uint64_t version_ = 0;
  std::vector<tracked_rule> rules_;
  std::string lease_sha_, heartbeat_sha_;
  std::string state_ = "idle";
  std::string last_error_;
  std::int64_t live_ = 1;   ///< the last heartbeat's count
  std::int64_t fleet_ = 1;  ///< the count fallbacks divide by: falls only after a whole census
  bool live_known_ = false;  ///< a whole census has counted the live instances
  bool reported_down_ = false;  ///< on_event was told of a failure, not yet of the recovery
  std::int64_t next_connect_ms_ = 0;
  std::int64_t connected_since_ms_ = -1;  ///< when the open connection was made; -1: none
  bool redis_cluster_ = false;  ///< the last connection's endpoints were a Redis Cluster
  std::int64_t next_heartbeat_ms_ = 0;
  std::int64_t backoff_ms_ = first_backoff_ms;
  std::array<std::uint64_t, lease_result_count> results_{};
  std::array<std::uint64_t, round_trip_bounds.size()> round_trip_counts_{};
  double round_trip_sum_ = 0;
  std::uint64_t round_trips_ = 0;
  std::uint64_t commands_ = 0;

  struct spent_series {
    std::uint64_t offset = 0;
    std::uint64_t last = 0;
  };
  std::map<std::pair<std::string, std::string>, spent_series> spent_series_;  // adapter thread
  mutable std::mutex status_mutex_;
  redis_cluster_status status_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

redis_cluster::redis_cluster(engine& eng, redis_cluster_options options)
    : impl_(std::make_unique<impl>(eng, std::move(options))) {}
redis_cluster::~redis_cluster() = default;
redis_cluster_status redis_cluster::status() const { return impl_->status(); }

}  // namespace floodgate::cluster

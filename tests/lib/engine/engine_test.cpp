// Node selection, cluster building, contexts, entries and caps (Sentinel's NodeSelectorTest,
// ClusterNodeBuilderTest, ContextTest, CtSphTest, CtEntryTest).
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace floodgate {
namespace {

const entry_options inbound{.type = entry_type::inbound};

struct engine_fixture : ::testing::Test {
  manual_clock clock;
  engine eng{engine_options{.time = &clock}};
  std::int64_t now() const { return clock.now_ms(); }
};

using Engine = engine_fixture;

TEST_F(Engine, SameResourceInTwoContextsHasTwoDefaultNodesAndOneClusterNode) {
  context a{eng, "ctx-a"};
  context b{eng, "ctx-b"};
  {
    auto e = eng.enter(a, "res");
    ASSERT_TRUE(e);
  }
  {
    auto e = eng.enter(b, "res");
    ASSERT_TRUE(e);
  }
  const auto* ea = eng.nodes().find_entrance("ctx-a");
  const auto* eb = eng.nodes().find_entrance("ctx-b");
  ASSERT_NE(ea, nullptr);
  ASSERT_NE(eb, nullptr);
  const auto* na = ea->children().first();
  const auto* nb = eb->children().first();
  ASSERT_NE(na, nullptr);
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(na->next_sibling(), nullptr);  // exactly one child each
  EXPECT_EQ(nb->next_sibling(), nullptr);
  EXPECT_NE(na, nb);
  EXPECT_EQ(&na->cluster(), &nb->cluster());
  EXPECT_EQ(na->cluster().total_pass(now()), 2u);
  EXPECT_EQ(na->total_pass(now()), 1u);
}

TEST_F(Engine, OriginGetsItsOwnNodeUnderTheClusterNode) {
  context ctx{eng, "ctx", "caller1"};
  {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
  }
  const auto* cluster = eng.nodes().find_resource("res");
  ASSERT_NE(cluster, nullptr);
  const auto* origin = cluster->first_origin();
  ASSERT_NE(origin, nullptr);
  EXPECT_EQ(origin->origin(), "caller1");
  EXPECT_EQ(origin->total_pass(now()), 1u);
  EXPECT_EQ(origin->next(), nullptr);
}

TEST_F(Engine, AlternatingOriginsEachCountInTheirOwnNode) {
  // The last origin seen is cached per resource and thread: switching origins must not mix them,
  // also between two origins of the same length.
  const char* order[] = {"alpha", "bravo", "alpha", "alpha", "bravo", "omega", "alpha"};
  for (const char* o : order) {
    context ctx{eng, "ctx", o};
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
  }
  std::map<std::string, std::uint64_t> passes;
  for (auto* n = eng.nodes().find_resource("res")->first_origin(); n != nullptr; n = n->next()) {
    passes[n->origin()] += n->total_pass(now());
  }
  const std::map<std::string, std::uint64_t> expected{{"alpha", 4}, {"bravo", 2}, {"omega", 1}};
  EXPECT_EQ(passes, expected);
}

TEST_F(Engine, EmptyOriginHasNoOriginNode) {
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
  }
  EXPECT_EQ(eng.nodes().find_resource("res")->first_origin(), nullptr);
}

TEST_F(Engine, NestedEntriesBuildTheTree) {
  context ctx{eng, "http-inbound"};
  {
    auto outer = eng.enter(ctx, "GET:/work", inbound);
    ASSERT_TRUE(outer);
    EXPECT_EQ(ctx.depth(), 1);
    auto inner = eng.enter(ctx, "backend:work");
    ASSERT_TRUE(inner);
    EXPECT_EQ(ctx.depth(), 2);
  }
  EXPECT_EQ(ctx.depth(), 0);
  const auto* root = eng.nodes().find_entrance("http-inbound");
  const auto* outer = root->children().first();
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->cluster().name(), "GET:/work");
  const auto* inner = outer->children().first();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->cluster().name(), "backend:work");
}

// A manual clock set before its origin after traffic: the windows index buckets by time since
// 0, and a negative time addressed memory before the minute ring (a crash in Release).
TEST_F(Engine, ATimeBeforeTheClocksOriginIsReadAsZero) {
  ASSERT_TRUE(eng.load_rules({.flow = {{.resource = "res", .count = 3}}}));
  context ctx{eng, "ctx"};
  clock.set_ms(0);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res"));
  clock.set_ms(-1'000'000);
  EXPECT_EQ(eng.time().now_ms(), 0);
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.enter(ctx, "res").blocked()) << "the same window as time 0";
  EXPECT_EQ(eng.nodes().find_resource("res")->pass_qps(eng.time().now_ms()), 3.0);
}

// After an inner entry exits, the next one nests under the same outer entry again; an outer
// entry exited before its inner one (a pairing violation) takes the inner one off the stack too.
TEST_F(Engine, ExitsRestoreTheParentForTheNextEntry) {
  context ctx{eng, "http-inbound"};
  auto outer = eng.enter(ctx, "outer");
  { auto first = eng.enter(ctx, "first"); }
  auto second = eng.enter(ctx, "second");
  EXPECT_EQ(ctx.depth(), 2);
  outer.exit();  // out of order: `second` is still open
  EXPECT_EQ(ctx.depth(), 0);
  auto top = eng.enter(ctx, "top");
  EXPECT_EQ(ctx.depth(), 1);
  second.exit();  // already popped: changes nothing
  EXPECT_EQ(ctx.depth(), 1);
  top.exit();

  const auto* root = eng.nodes().find_entrance("http-inbound");
  std::vector<std::string> top_level;
  for (const auto* n = root->children().first(); n != nullptr; n = n->next_sibling()) {
    top_level.emplace_back(n->cluster().name());
  }
  EXPECT_EQ(top_level, (std::vector<std::string>{"top", "outer"}));  // newest first
  const auto* outer_node = root->children().first()->next_sibling();
  std::vector<std::string> under_outer;
  for (const auto* n = outer_node->children().first(); n != nullptr; n = n->next_sibling()) {
    under_outer.emplace_back(n->cluster().name());
  }
  EXPECT_EQ(under_outer, (std::vector<std::string>{"second", "first"}));
}

// Past max_depth entries still count, and their nodes hang under the deepest tracked node.
TEST_F(Engine, EntriesDeeperThanMaxDepthHangUnderTheDeepestNode) {
  context ctx{eng, "deep"};
  std::vector<entry> open;
  for (int d = 0; d < context::max_depth + 2; ++d) {
    open.push_back(eng.enter(ctx, "level" + std::to_string(d)));
    ASSERT_TRUE(open.back());
  }
  EXPECT_EQ(ctx.depth(), context::max_depth + 2);
  const node::default_node* n = eng.nodes().find_entrance("deep")->children().first();
  for (int d = 1; d < context::max_depth; ++d) {
    n = n->children().first();
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->cluster().name(), "level" + std::to_string(d));
  }
  std::vector<std::string> below;
  for (const auto* c = n->children().first(); c != nullptr; c = c->next_sibling()) {
    below.emplace_back(c->cluster().name());
  }
  EXPECT_EQ(below, (std::vector<std::string>{"level" + std::to_string(context::max_depth + 1),
                                             "level" + std::to_string(context::max_depth)}));
  while (!open.empty()) {
    open.pop_back();  // innermost first
  }
  EXPECT_EQ(ctx.depth(), 0);
  auto again = eng.enter(ctx, "level0");
  EXPECT_EQ(eng.nodes().find_entrance("deep")->children().first()->next_sibling(), nullptr);
}

TEST_F(Engine, AContextFromAnEntranceHandleIsTheSameContext) {
  const entrance_handle h = eng.entrance("http-inbound");
  ASSERT_TRUE(h);
  context by_handle{eng, h, "billing"};
  EXPECT_EQ(by_handle.name(), "http-inbound");
  EXPECT_EQ(by_handle.origin(), "billing");
  { auto e = eng.enter(by_handle, "res"); }
  context by_name{eng, "http-inbound", "billing"};
  { auto e = eng.enter(by_name, "res"); }
  const auto* root = eng.nodes().find_entrance("http-inbound");
  ASSERT_NE(root->children().first(), nullptr);
  EXPECT_EQ(root->children().first()->next_sibling(), nullptr);  // one default node for both
  EXPECT_EQ(root->children().first()->total_pass(now()), 2u);
  EXPECT_EQ(eng.nodes().find_resource("res")->first_origin()->total_pass(now()), 2u);
}

TEST_F(Engine, ExitRecordsRtSuccessAndConcurrency) {
  context ctx{eng, "ctx"};
  auto e = eng.enter(ctx, "res", inbound);
  ASSERT_TRUE(e);
  const auto& cluster = *eng.nodes().find_resource("res");
  EXPECT_EQ(cluster.concurrency(), 1);
  EXPECT_EQ(eng.nodes().inbound().concurrency(), 1);
  clock.advance_ms(30);
  e.exit();
  e.exit();  // idempotent
  EXPECT_EQ(cluster.concurrency(), 0);
  EXPECT_EQ(eng.nodes().inbound().concurrency(), 0);
  EXPECT_DOUBLE_EQ(cluster.avg_rt(now()), 30.0);
  EXPECT_EQ(cluster.total_success(now()), 1u);
  EXPECT_EQ(cluster.totals().completed(), 1u);
  EXPECT_EQ(cluster.totals().passed.load(), 1u);
}

TEST_F(Engine, DurationsHaveMillisecondResolutionUnlessAskedForNanoseconds) {
  clock.set_ms(1000);
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "coarse", inbound);
    clock.advance_ns(400'000);  // 0.4 ms: the same millisecond
  }
  const auto& coarse = eng.nodes().find_resource("coarse")->totals();
  EXPECT_EQ(coarse.duration_sum_ns.load(), 0u);
  EXPECT_EQ(coarse.duration[0].load(), 1u);

  entry_options precise = inbound;
  precise.precise_duration = true;
  {
    auto e = eng.enter(ctx, "precise", precise);
    clock.advance_ns(400'000);
  }
  {
    auto e = eng.enter(ctx, "precise", precise);
    clock.advance_ns(7'250'000);  // 7.25 ms: past the 5 ms bucket
  }
  const auto& fine = eng.nodes().find_resource("precise")->totals();
  EXPECT_EQ(fine.duration_sum_ns.load(), 7'650'000u);
  EXPECT_EQ(fine.duration[0].load(), 1u);  // le 0.005
  EXPECT_EQ(fine.duration[1].load(), 1u);  // le 0.01
  EXPECT_EQ(fine.completed(), 2u);
}

TEST_F(Engine, TracedErrorCountsAsException) {
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
    e.trace_error();
  }
  const auto& cluster = *eng.nodes().find_resource("res");
  EXPECT_EQ(cluster.total_exception(now()), 1u);
  EXPECT_EQ(cluster.totals().errors.load(), 1u);
}

TEST_F(Engine, OutboundEntriesAreNotInboundTraffic) {
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "res");
    ASSERT_TRUE(e);
  }
  EXPECT_EQ(eng.nodes().inbound().total_pass(now()), 0u);
  {
    auto e = eng.enter(ctx, "res", inbound);
    ASSERT_TRUE(e);
  }
  EXPECT_EQ(eng.nodes().inbound().total_pass(now()), 1u);
}

TEST_F(Engine, MovedEntryExitsExactlyOnce) {
  context ctx{eng, "ctx"};
  {
    auto e = eng.enter(ctx, "res");
    entry moved = std::move(e);
    EXPECT_FALSE(e.passed());
    EXPECT_TRUE(moved.passed());
  }
  const auto& cluster = *eng.nodes().find_resource("res");
  EXPECT_EQ(cluster.concurrency(), 0);
  EXPECT_EQ(cluster.totals().completed(), 1u);
}

TEST_F(Engine, EntryMayExitOnAnotherThread) {
  context ctx{eng, "ctx"};
  auto e = eng.enter(ctx, "res");
  std::thread([en = std::move(e)]() mutable { en.exit(); }).join();
  EXPECT_EQ(eng.nodes().find_resource("res")->concurrency(), 0);
}

TEST(EngineCaps, PastTheContextCapContextsAreNullAndPassUnchecked) {
  manual_clock clock;
  engine eng{engine_options{.limits = {.max_contexts = 3}, .time = &clock}};
  for (int i = 0; i < 3; ++i) {
    context c{eng, "ctx" + std::to_string(i)};
    EXPECT_FALSE(c.is_null());
  }
  context overflow{eng, "abc", "bcd"};
  EXPECT_TRUE(overflow.is_null());
  auto e = eng.enter(overflow, "res");
  EXPECT_TRUE(e.passed());
  EXPECT_TRUE(e.unchecked());
  EXPECT_EQ(eng.nodes().overflow().contexts.load(), 1u);
  context existing{eng, "ctx1"};
  EXPECT_FALSE(existing.is_null());
  EXPECT_FALSE(eng.entrance("one-more"));  // past the cap: an empty handle, a null context
  context from_empty{eng, entrance_handle{}, "bcd"};
  EXPECT_TRUE(from_empty.is_null());
  EXPECT_TRUE(eng.enter(from_empty, "res").unchecked());
}

TEST(EngineCaps, PastTheResourceCapEntriesPassUncheckedAndAreCounted) {
  manual_clock clock;
  engine eng{engine_options{.limits = {.max_resources = 5}, .time = &clock}};
  context ctx{eng, "ctx"};
  for (int i = 0; i < 5; ++i) {
    auto e = eng.enter(ctx, "res" + std::to_string(i));
    EXPECT_FALSE(e.unchecked());
  }
  auto e = eng.enter(ctx, "one-too-many");
  EXPECT_TRUE(e.passed());
  EXPECT_TRUE(e.unchecked());
  EXPECT_EQ(eng.nodes().resource_count(), 5u);
  EXPECT_EQ(eng.nodes().overflow().resources.load(), 1u);
  EXPECT_EQ(eng.nodes().find_resource("one-too-many"), nullptr);
}

TEST(EngineCaps, PastTheOriginCapTheResourceIsStillChecked) {
  manual_clock clock;
  engine eng{engine_options{.limits = {.max_origin_nodes = 1}, .time = &clock}};
  context a{eng, "ctx", "a"};
  context b{eng, "ctx", "b"};
  {
    auto e = eng.enter(a, "res");
    EXPECT_FALSE(e.unchecked());
  }
  {
    auto e = eng.enter(b, "res");
    EXPECT_FALSE(e.unchecked());
  }
  EXPECT_EQ(eng.nodes().overflow().origins.load(), 1u);
  EXPECT_EQ(eng.nodes().find_resource("res")->total_pass(clock.now_ms()), 2u);
}

// A user slot that blocks entries whose first argument is 1 and asks others to wait 5 ms.
class test_slot final : public slot {
 public:
  explicit test_slot(int order) : order_(order) {}
  int order() const noexcept override { return order_; }
  slot_verdict on_entry(const check_context& ctx) noexcept override {
    ++entries;
    if (!ctx.args.empty() && ctx.args[0].as_integer() == 1) {
      return slot_verdict::blocked({.retry_after = std::chrono::milliseconds(7)});
    }
    return slot_verdict::wait(5'000'000);
  }
  void on_exit(const exit_context&) noexcept override { ++exits; }
  int entries = 0;
  int exits = 0;

 private:
  int order_;
};

TEST_F(Engine, UserSlotsCanBlockAndAskToWait) {
  auto s = std::make_shared<test_slot>(-2500);
  eng.add_slot(s);
  context ctx{eng, "ctx"};
  const param_value block_me[] = {1};
  auto blocked = eng.enter(ctx, "res", {.args = block_me});
  EXPECT_TRUE(blocked.blocked());
  EXPECT_EQ(blocked.block().reason, block_reason::custom);
  EXPECT_EQ(blocked.block().retry_after, std::chrono::milliseconds(7));
  {
    auto passed = eng.enter(ctx, "res");
    EXPECT_TRUE(passed);
    EXPECT_EQ(passed.wait(), std::chrono::milliseconds(5));
  }
  EXPECT_EQ(s->entries, 2);
  EXPECT_EQ(s->exits, 1);
  const auto& cluster = *eng.nodes().find_resource("res");
  EXPECT_EQ(cluster.block_request(now()), 1u);
  EXPECT_EQ(cluster.totals().blocked[static_cast<std::size_t>(block_reason::custom)].load(), 1u);
  EXPECT_EQ(cluster.concurrency(), 0);
}

// An audit of the API: a cap of SIZE_MAX ("unlimited") wrapped the table size to 16 slots and
// the second new resource then probed them forever; a null slot crashed the next publish.
TEST(EngineOptions, ACapOverTheMaximumIsRejectedNamingIt) {
  constexpr std::size_t over = node::registry_limits::max_cap + 1;
  const std::pair<const char*, std::size_t node::registry_limits::*> caps[] = {
      {"max_resources", &node::registry_limits::max_resources},
      {"max_contexts", &node::registry_limits::max_contexts},
      {"max_default_nodes", &node::registry_limits::max_default_nodes},
      {"max_origin_nodes", &node::registry_limits::max_origin_nodes},
      {"max_origins_per_resource", &node::registry_limits::max_origins_per_resource}};
  for (const auto& [name, field] : caps) {
    for (const std::size_t value : {over, std::numeric_limits<std::size_t>::max()}) {
      engine_options options;
      options.limits.*field = value;
      try {
        engine eng{options};
        ADD_FAILURE() << name << " = " << value << " was accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), std::string("floodgate::engine_options.limits.") + name +
                                             ": must be at most 16777216, not " +
                                             std::to_string(value));
      }
    }
  }
}

// An audit of the API: -5 silently turned prioritized borrowing off. More than the window's
// interval is cut to it (Sentinel ignores it), so the default 500 ms works with a shorter window.
TEST(EngineOptions, ANegativeOccupyTimeoutIsRejected) {
  try {
    engine eng{engine_options{.occupy_timeout_ms = -5}};
    ADD_FAILURE() << "-5 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "floodgate::engine_options.occupy_timeout_ms: must be >= 0, not -5");
  }
  for (const std::int64_t value : {std::int64_t{0}, std::int64_t{1'000}, std::int64_t{100'000}}) {
    EXPECT_NO_THROW(engine(engine_options{.occupy_timeout_ms = value})) << value;
  }
  EXPECT_NO_THROW(engine(engine_options{
      .windows = {.second_sample_count = 2, .second_interval_ms = 200}}));  // default 500
}

TEST_F(Engine, ANullSlotIsRejectedAndTheChainStaysUsable) {
  EXPECT_THROW(eng.add_slot(nullptr), std::invalid_argument);
  context ctx{eng, "ctx"};
  EXPECT_TRUE(eng.enter(ctx, "res"));
  EXPECT_TRUE(eng.load_rules({}));
}

TEST_F(Engine, AnUnknownRateLimitHeaderStyleIsRejected) {
  rule_set rules;
  rules.rate_limit_headers = static_cast<rate_limit_header_style>(9);
  const load_result loaded = eng.load_rules(rules);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].path, "rateLimitHeaders");
  EXPECT_EQ(loaded.errors[0].message, "must be off, draft03 or ietf");
  EXPECT_EQ(eng.rate_limit_headers(), rate_limit_header_style::off);
}

TEST_F(Engine, AnUnknownParameterSourceIsNamedAsSuch) {
  rule_set rules;
  rules.param_flow.push_back({.resource = "res",
                              .param = param_selector{.from = static_cast<param_source>(9)},
                              .count = 1});
  const load_result loaded = eng.load_rules(rules);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].path, "paramFlow[0].param.from");
  EXPECT_EQ(loaded.errors[0].message, "must be header, query, path, client_ip or origin");
}

TEST_F(Engine, RulesVersionAdvancesOnEveryLoad) {
  const auto v = eng.rules_version();
  ASSERT_TRUE(eng.load_rules({}));
  EXPECT_EQ(eng.rules_version(), v + 1);
  EXPECT_EQ(eng.rules(), rule_set{});
}

}  // namespace
}  // namespace floodgate

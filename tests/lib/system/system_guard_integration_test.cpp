// System rules through the engine, with an injected status source.
#include <floodgate/engine/engine.hpp>
#include <floodgate/system/manual_system_status.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace floodgate {
namespace {

struct SystemGuardIntegration : ::testing::Test {
  manual_clock clock;
  std::shared_ptr<manual_system_status> status = std::make_shared<manual_system_status>();
  engine eng{engine_options{.time = &clock, .system_status = status}};

  void load(system_rule r) {
    rule_set rules;
    rules.system.push_back(r);
    ASSERT_TRUE(eng.load_rules(rules));
  }
  entry enter(context& ctx, std::string_view resource, entry_type type = entry_type::inbound) {
    return eng.enter(ctx, resource, {.type = type});
  }
};

TEST_F(SystemGuardIntegration, QpsLimitCoversAllInboundResourcesTogether) {
  system_rule r;
  r.qps = 3;
  load(r);
  context ctx{eng, "http-inbound"};
  EXPECT_TRUE(enter(ctx, "GET:/a").passed());
  EXPECT_TRUE(enter(ctx, "GET:/b").passed());
  EXPECT_TRUE(enter(ctx, "GET:/c").passed());
  auto blocked = enter(ctx, "GET:/a");
  ASSERT_TRUE(blocked.blocked());
  EXPECT_EQ(blocked.block().reason, block_reason::system);
  EXPECT_EQ(blocked.block().limit, system_limit::qps);
  EXPECT_EQ(blocked.block().retry_after, std::chrono::seconds(1));
  EXPECT_TRUE(enter(ctx, "redis:get", entry_type::outbound).passed()) << "outbound is exempt";
  clock.advance_ms(1000);
  EXPECT_TRUE(enter(ctx, "GET:/a").passed());
}

TEST_F(SystemGuardIntegration, MaxThreadCountsInboundEntriesInFlight) {
  system_rule r;
  r.max_thread = 1;
  load(r);
  context a{eng, "http-inbound"};
  context b{eng, "http-inbound"};
  context c{eng, "http-inbound"};
  auto first = enter(a, "GET:/a");
  auto second = enter(b, "GET:/b");  // 1 in flight: not above 1
  ASSERT_TRUE(first.passed());
  ASSERT_TRUE(second.passed());
  auto third = enter(c, "GET:/a");
  ASSERT_TRUE(third.blocked());
  EXPECT_EQ(third.block().limit, system_limit::thread);
  first.exit();
  second.exit();
  EXPECT_TRUE(enter(c, "GET:/a").passed());
}

TEST_F(SystemGuardIntegration, CpuLimitTripsOnceTheSamplerReportsUsage) {
  system_rule r;
  r.highest_cpu_usage = 0;  // Sentinel's SystemRuleManagerTest: cpu 0 blocks after a sample
  load(r);
  context ctx{eng, "http-inbound"};
  EXPECT_TRUE(enter(ctx, "GET:/a").passed()) << "no sample yet";
  status->set_cpu_usage(0.2);
  auto e = enter(ctx, "GET:/a");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().limit, system_limit::cpu);
}

TEST_F(SystemGuardIntegration, HighLoadBlocksOnlyWhenInFlightExceedsCapacity) {
  system_rule r;
  r.highest_system_load = 2;
  load(r);
  status->set_load1(10);
  context warm{eng, "http-inbound"};
  {
    auto e = enter(warm, "GET:/a");  // one fast request: capacity 2 × 1 ms / 1000
    ASSERT_TRUE(e.passed());
    clock.advance_ms(1);
  }
  std::vector<std::unique_ptr<context>> ctxs;
  std::vector<entry> held;
  for (int i = 0; i < 2; ++i) {
    ctxs.push_back(std::make_unique<context>(eng, "http-inbound"));
    held.push_back(enter(*ctxs.back(), "GET:/a"));
    ASSERT_TRUE(held.back().passed()) << "at most one in flight when checked";
  }
  context late{eng, "http-inbound"};
  auto e = enter(late, "GET:/a");
  ASSERT_TRUE(e.blocked());
  EXPECT_EQ(e.block().limit, system_limit::load);
  status->set_load1(1);
  EXPECT_TRUE(enter(late, "GET:/a").passed());
}

TEST_F(SystemGuardIntegration, RemovingTheRulesStopsChecking) {
  system_rule r;
  r.qps = 0;
  load(r);
  context ctx{eng, "http-inbound"};
  EXPECT_TRUE(enter(ctx, "GET:/a").blocked());
  ASSERT_TRUE(eng.load_rules({}));
  EXPECT_TRUE(enter(ctx, "GET:/a").passed());
}

}  // namespace
}  // namespace floodgate

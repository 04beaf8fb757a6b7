// A fixture running floodgate-demo with a rule file of the test's own.
#pragma once

#include "support/demo_process.hpp"
#include "support/http_client.hpp"
#include "support/metrics_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace floodgate::test {

class DemoTest : public ::testing::Test {
 protected:
  /// Starts the demo on free ports with `yaml` as its rule file.
  void start(const std::string& yaml, std::vector<std::string> flags = {}) {
    rules_ = std::make_unique<rules_dir>(yaml);
    flags.insert(flags.end(), {"--rules", rules_->path()});
    demo_ = std::make_unique<demo_process>(std::move(flags));
    ASSERT_TRUE(demo_->started());
  }

  http_response get(std::string_view target, const header_list& headers = {}) const {
    return http_get(demo_->port(), target, headers);
  }
  boost::json::value admin_json(std::string_view target) const {
    const http_response r = http_get(demo_->admin_port(), target);
    EXPECT_EQ(r.status, 200u) << target;
    return boost::json::parse(r.body);
  }
  std::string metrics() const { return http_get(demo_->admin_port(), "/metrics").body; }
  /// floodgate_inflight_requests of `resource` (0 when the resource has no series yet).
  double inflight(const std::string& resource) const {
    return sample(metrics(), "floodgate_inflight_requests", {{"resource", resource}}).value_or(0);
  }

  std::unique_ptr<rules_dir> rules_;
  std::unique_ptr<demo_process> demo_;
};

}  // namespace floodgate::test

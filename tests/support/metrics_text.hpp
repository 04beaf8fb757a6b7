// Reading Prometheus text expositions in tests, and checking them with promtool.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::test {

using label_map = std::map<std::string, std::string>;

/// The value of sample `name` with exactly `labels` (any order); nullopt if there is none.
std::optional<double> sample(std::string_view exposition, std::string_view name,
                             const label_map& labels = {});

/// The `# TYPE` of a metric family; empty if absent.
std::string metric_type(std::string_view exposition, std::string_view name);

struct promtool_result {
  bool ok = false;
  std::string output;  ///< what promtool printed (problems found)
};

/// `promtool check metrics` on the exposition; nullopt when promtool is not installed.
std::optional<promtool_result> promtool_check(const std::string& exposition);

}  // namespace floodgate::test

// System rule validation: every threshold is -1 (off) or a finite number >= 0.
#include <floodgate/rules/system_rule.hpp>

#include <cmath>
#include <string>

namespace floodgate {

namespace {

/// A threshold is -1 (off) or >= 0; NaN and other negatives are errors.
bool valid_threshold(double v) noexcept { return v == -1 || (v >= 0 && std::isfinite(v)); }

}  // namespace

void validate(const system_rule& rule, std::string_view path, std::vector<rule_error>& errors) {
  const std::string p(path);
  const auto check = [&](double v, const char* key) {
    if (!valid_threshold(v)) errors.push_back({p + "." + key, "must be >= 0, or -1 (off)"});
  };
  check(rule.highest_system_load, "highestSystemLoad");
  if (!valid_threshold(rule.highest_cpu_usage) || rule.highest_cpu_usage > 1) {
    errors.push_back({p + ".highestCpuUsage", "must be between 0 and 1, or -1 (off)"});
  }
  // Longs in Sentinel: whole numbers, under 2^53 so that a file written from them reads back.
  const auto check_whole = [&](double v, const char* key) {
    check(v, key);
    if (valid_threshold(v) && (std::trunc(v) != v || v >= 9'007'199'254'740'992.0)) {
      errors.push_back({p + "." + key, "must be an integer of at most 9007199254740991"});
    }
  };
  check_whole(rule.avg_rt, "avgRt");
  check_whole(rule.max_thread, "maxThread");
  check(rule.qps, "qps");
}

}  // namespace floodgate

// Rule files: strict YAML / Sentinel-JSON parsing with file:line:column errors, and serialisation.
#pragma once

#include <floodgate/rules/rule_set.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::config {

/// Largest rule file accepted: 8 MiB. A flow and a degrade rule for each of 6000 resources (the
/// default resource cap) take 2.9 MB as Sentinel's compact JSON, twice that pretty-printed.
/// Bounds the time a reload spends reading; document_reader::max_values bounds the parse.
inline constexpr std::size_t max_rule_file_bytes = 8 * 1024 * 1024;

/// One problem of a rule file, located. Printed as `FILE:LINE:COLUMN: PATH: message`.
/// What to_string() prints as the path of an error about the file as a whole.
inline constexpr std::string_view file_level_path = "(file)";

struct rule_file_error {
  std::string file;
  int line = 1;      ///< 1-based; 1 for errors about the file as a whole
  int column = 1;    ///< 1-based
  std::string path;  ///< `flow[1].count`; empty for file-level errors (syntax, unreadable)
  std::string message;
  std::string to_string() const;
};

/// Either a complete rule set or every error found (never both).
struct parse_result {
  std::optional<rule_set> rules;
  std::vector<rule_file_error> errors;
  bool ok() const noexcept { return rules.has_value(); }
  /// All errors, one per line.
  std::string error_text() const;
};

/** Parses rule-file text (YAML; JSON is valid YAML). `file_name` is used in error locations.
    Strict: any error rejects the whole text; the rule structs are also validated as the engine
    would (so an ok result always loads).

    The schema is SPEC §3: sections `flow`, `degrade`, `authority`, `system`, `paramFlow`,
    `hotKeys`,
    each a list of rules with camelCase keys and an optional `name`, and an optional `cluster` mapping
    (`redis`, `namespace`, `timeoutMs`) that flow rules with `clusterMode: true` and
    `clusterConfig: {thresholdType, fallbackToLocalWhenFail, fallbackCount}` need. Enum values
    are names (any case, aliases `thread`, `default`, `rate_limiter`, `warm_up_rate_limiter`) or
    Sentinel's numeric codes. A null value (`key:`, `~`, JSON `null`) means "not given". To let
    Sentinel's rule JSON paste unchanged, its extra keys are accepted in their harmless form and
    ignored: `id`, `regex: false`, `clusterMode: false` (paramFlow), `clusterConfig` with
    `clusterMode: false`, the token-server keys of Sentinel's `ClusterFlowConfig` (`flowId`,
    `strategy: 0`, `resourceTimeout`, `resourceTimeoutStrategy`, `acquireRefuseStrategy`,
    `clientOfflineTime`, `prefetchCntRatio`; with `clusterMode: true`, `sampleCount: 10` and
    `windowIntervalMs: 1000`, the window kept on Redis), `limitApp: default` where Sentinel ignores it
    (degrade, system, paramFlow), `paramFlowItemList` with `{object, count, classType}` as a
    spelling of `items`. `regex: true` and paramFlow `clusterMode: true` are errors.

    Errors carry the 1-based line and column of the offending value (of the key for unknown and
    duplicate keys, of the rule for missing fields); errors about the file as a whole
    (unreadable, too large) are at 1:1. At most 1000 errors are listed. */
parse_result parse_rules(std::string_view text, std::string_view file_name);

/// Reads and parses a file (size-capped). A missing, unreadable or empty file is an error.
parse_result read_rule_file(const std::string& path);

/// The rules as YAML in the file's schema; parse_rules(to_yaml(r)) gives back `r` when `r`
/// validates and its text is UTF-8 (a rule file is UTF-8 text; other bytes cannot be written).
std::string to_yaml(const rule_set& rules);
/// The rules as JSON in the file's schema (each section a Sentinel-style array).
std::string to_json(const rule_set& rules);

}  // namespace floodgate::config

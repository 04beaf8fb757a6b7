// Command-line flags of floodgate-demo (SPEC §5).
#pragma once

#include <floodgate/beast/rate_limit_headers.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace floodgate::demo {

struct demo_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;        ///< 0: any free port
  std::uint16_t admin_port = 8719;  ///< always on 127.0.0.1; 0: any free port
  std::string rules;                ///< empty: examples/rules.yaml (see default_rules_path)
  unsigned threads = 0;             ///< 0: one per core
  std::string origin_header = "X-Origin";
  bool guard = true;                ///< --no-guard: the same server without the middleware
  std::chrono::milliseconds drain_timeout{10'000};
  /// Connections the main port serves at once (server_limits::max_connections).
  std::size_t max_connections = 4096;
  /// Redis for clusterMode rules whose file sets `cluster:` without `redis`.
  std::string redis;
  /// --rate-limit-headers: the fields telling clients their limit; unset, the rule file's
  /// `rateLimitHeaders` (off when it has none)
  std::optional<floodgate::beast::rate_limit_header_style> rate_limit_headers;
};

/// Either options, or the message to print (usage or an error) and the exit code.
struct parse_failure {
  std::string message;
  int exit_code = 2;
};

std::variant<demo_options, parse_failure> parse_options(int argc, const char* const* argv);

/// examples/rules.yaml relative to the working directory if it exists there, else in the source
/// tree the demo was built from.
std::string default_rules_path();

}  // namespace floodgate::demo

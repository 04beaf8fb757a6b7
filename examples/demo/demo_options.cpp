#include "demo_options.hpp"

#include <floodgate/rules/cluster_config.hpp>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <string_view>

#ifndef FLOODGATE_SOURCE_DIR
#define FLOODGATE_SOURCE_DIR "."
#endif

namespace floodgate::demo {

namespace {

constexpr std::string_view usage =
    "usage: floodgate-demo [--address A] [--port N] [--admin-port N] [--rules FILE]\n"
    "                      [--threads N] [--origin-header H] [--no-guard] [--drain-timeout-ms N]\n"
    "                      [--max-connections N] [--rate-limit-headers off|draft03|ietf]\n"
    "                      [--redis URL]\n"
    "  --address A          listen IP address (127.0.0.1)\n"
    "  --port N             listen port (8080; 0 = any free port)\n"
    "  --admin-port N       admin API port on 127.0.0.1 (8719; 0 = any free port)\n"
    "  --rules FILE         rule file, hot-reloaded (examples/rules.yaml)\n"
    "  --threads N          I/O threads (number of cores)\n"
    "  --origin-header H    header naming the caller (X-Origin; '' reads none)\n"
    "  --no-guard           serve without the middleware (benchmark baseline)\n"
    "  --drain-timeout-ms N longest wait for requests in flight on shutdown (10000)\n"
    "  --max-connections N  connections served at once on the main port; more are answered\n"
    "                       503 and closed (4096, and always below the open-file limit)\n"
    "  --redis URL          Redis for clusterMode rules when the file's cluster: has no redis\n"
    "  --rate-limit-headers S  tell clients their limit: off, draft03 (x-ratelimit-*) or\n"
    "                       ietf (RateLimit-Policy, RateLimit) (the rule file's\n"
    "                       rateLimitHeaders, else off)\n";

/// Every flag that takes a value (`--flag V` or `--flag=V`).
constexpr std::array<std::string_view, 10> valued_flags = {"--address",
                                                           "--port",
                                                           "--admin-port",
                                                           "--rules",
                                                           "--threads",
                                                           "--origin-header",
                                                           "--drain-timeout-ms",
                                                           "--max-connections",
                                                           "--redis",
                                                           "--rate-limit-headers"};

template <class T>
bool parse_number(std::string_view s, T& out, T min, T max) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < min || v > max) {
    return false;
  }
  out = v;
  return true;
}

/// A header field name: one or more token characters (RFC 9110 section 5.1).
bool is_field_name(std::string_view s) {
  constexpr std::string_view punctuation = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           punctuation.find(c) != std::string_view::npos;
  });
}

parse_failure bad(std::string_view flag, std::string_view why) {
  return {
      "floodgate-demo: " + std::string(flag) + ": " + std::string(why) + "\n" + std::string(usage),
      2};
}

}  // namespace

std::variant<demo_options, parse_failure> parse_options(int argc, const char* const* argv) {
  demo_options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      return parse_failure{std::string(usage), 0};
    }
    if (flag == "--no-guard") {
      o.guard = false;
      continue;
    }
    std::string_view value;
    const auto eq = flag.starts_with("--") ? flag.find('=') : std::string_view::npos;
    const std::string_view name = flag.substr(0, eq);
    if (std::find(valued_flags.begin(), valued_flags.end(), name) == valued_flags.end()) {
      return bad(name, flag.starts_with("--") ? "unknown flag" : "unknown argument");
    }
    if (eq != std::string_view::npos) {
      value = flag.substr(eq + 1);
      flag = name;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return bad(flag, "needs a value");
    }
    if (flag == "--address") {
      boost::system::error_code ec;
      (void)boost::asio::ip::make_address(std::string(value), ec);
      if (ec) return bad(flag, "not an IP address: " + std::string(value));
      o.address = value;
    } else if (flag == "--port") {
      if (!parse_number<std::uint16_t>(value, o.port, 0, 65535)) return bad(flag, "not a port");
    } else if (flag == "--admin-port") {
      if (!parse_number<std::uint16_t>(value, o.admin_port, 0, 65535)) {
        return bad(flag, "not a port");
      }
    } else if (flag == "--rules") {
      // An unset variable (`--rules "$RULES"`) must not start the example rules instead.
      if (value.empty()) return bad(flag, "needs a file, not ''");
      o.rules = value;
    } else if (flag == "--threads") {
      if (!parse_number<unsigned>(value, o.threads, 1, 256)) return bad(flag, "must be 1..256");
    } else if (flag == "--origin-header") {
      // Empty reads no origin; any other name no request can carry would silently turn off
      // every origin-specific rule.
      if (!value.empty() && !is_field_name(value)) {
        return bad(flag, "not a header field name: '" + std::string(value) + "'");
      }
      o.origin_header = value;
    } else if (flag == "--drain-timeout-ms") {
      long ms = 0;
      if (!parse_number<long>(value, ms, 0, 3'600'000)) return bad(flag, "must be 0..3600000");
      o.drain_timeout = std::chrono::milliseconds(ms);
    } else if (flag == "--max-connections") {
      if (!parse_number<std::size_t>(value, o.max_connections, 1, 1'000'000)) {
        return bad(flag, "must be 1..1000000");
      }
    } else if (flag == "--redis") {
      std::string why;
      if (!parse_redis_url(value, why)) return bad(flag, why);
      o.redis = value;
    } else if (flag == "--rate-limit-headers") {
      floodgate::beast::rate_limit_header_style style{};
      if (!floodgate::beast::parse_rate_limit_header_style(value, style)) {
        return bad(flag, "must be off, draft03 or ietf");
      }
      o.rate_limit_headers = style;
    }
  }
  if (o.rules.empty()) {
    o.rules = default_rules_path();
  }
  return o;
}

std::string default_rules_path() {
  const std::filesystem::path local = "examples/rules.yaml";
  std::error_code ec;
  if (std::filesystem::exists(local, ec)) {
    return local.string();
  }
  return (std::filesystem::path(FLOODGATE_SOURCE_DIR) / local).string();
}

}  // namespace floodgate::demo

// The cluster section's checks and the Redis URL grammar.
#include <floodgate/rules/cluster_config.hpp>

#include <charconv>

namespace floodgate {

namespace {

constexpr std::string_view scheme = "redis://";
constexpr std::string_view tls_scheme = "rediss://";

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

/// `text` with %XX escapes decoded; nothing if an escape is malformed or a NUL (it would cut a
/// file name short).
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) return std::nullopt;  // two hex digits must follow
    const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc{} || end != text.data() + i + 3 || value == 0) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

/** The URL's query: the files of a rediss:// connection, named as redis-py names them
    (`ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile`), values percent-encoded. */
bool read_tls_parameters(std::string_view query, redis_endpoint& e, std::string& error) {
  if (!e.tls) {
    error = "URL parameters (ssl_ca_certs, ssl_certfile, ssl_keyfile) apply to rediss:// only";
    return false;
  }
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    std::string* field = key == "ssl_ca_certs"   ? &e.tls_ca_file
                         : key == "ssl_certfile" ? &e.tls_cert_file
                         : key == "ssl_keyfile"  ? &e.tls_key_file
                                                 : nullptr;
    if (field == nullptr) {
      error = "unknown URL parameter \"" + std::string(key) +
              "\"; expected ssl_ca_certs, ssl_certfile or ssl_keyfile";
      return false;
    }
    const auto value = percent_decoded(eq == std::string_view::npos ? "" : item.substr(eq + 1));
    if (!value || value->empty()) {
      error = std::string(key) + " must name a file (percent-encoded)";
      return false;
    }
    *field = *value;
  }
  if (!e.tls_key_file.empty() && e.tls_cert_file.empty()) {
    error = "ssl_keyfile needs ssl_certfile (the client certificate it belongs to)";
    return false;
  }
  return true;
}

}  // namespace

std::string without_password(std::string_view url) {
  const auto start = url.find("://");
  const std::size_t from = start == std::string_view::npos ? 0 : start + 3;
  const auto at = url.rfind('@');  // as parse_redis_url splits the credentials
  if (at == std::string_view::npos || at < from) {
    return std::string(url);
  }
  const auto colon = url.find(':', from);
  if (colon == std::string_view::npos || colon > at || colon + 1 == at) {
    return std::string(url);  // a user alone, or an empty password
  }
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

std::optional<redis_endpoint> parse_redis_url(std::string_view url, std::string& error) {
  redis_endpoint e;
  std::string_view rest;
  if (url.starts_with(scheme)) {
    rest = url.substr(scheme.size());
  } else if (url.starts_with(tls_scheme)) {
    rest = url.substr(tls_scheme.size());
    e.tls = true;
  } else {
    error = "must be a redis://[[user]:password@]host[:port][/db] (or rediss://) URL";
    return std::nullopt;
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view auth = rest.substr(0, at);
    // The last @ ends the credentials (a password may hold @ and ?): one inside a parameter
    // would take the parameters for credentials.
    for (const std::string_view key : {"?ssl_ca_certs=", "?ssl_certfile=", "?ssl_keyfile=",
                                       "&ssl_ca_certs=", "&ssl_certfile=", "&ssl_keyfile="}) {
      if (auth.find(key) != std::string_view::npos) {
        error = "an @ in a URL parameter must be percent-encoded (%40)";
        return std::nullopt;
      }
    }
    rest = rest.substr(at + 1);
    const auto colon = auth.find(':');
    if (colon == std::string_view::npos) {
      error = "credentials must be user:password@ or :password@";
      return std::nullopt;
    }
    // Percent-decoded, as URLs are and as redis-py reads them: a user may hold `:` as %3A, and a
    // literal `%` is %25.
    const auto user = percent_decoded(auth.substr(0, colon));
    const auto password = percent_decoded(auth.substr(colon + 1));
    if (!user || !password) {
      error = "the credentials are percent-encoded: a % must start an escape of a byte other than "
              "NUL (%25 for a % itself)";
      return std::nullopt;
    }
    e.user = *user;
    e.password = *password;
  }
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    const std::string_view query = rest.substr(question + 1);
    rest = rest.substr(0, question);
    if (!read_tls_parameters(query, e, error)) return std::nullopt;
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty() && (!parse_number(db, e.db) || e.db < 0)) {
      error = "the database must be a number >= 0";
      return std::nullopt;
    }
  }
  std::string_view host = rest;
  std::optional<std::string_view> port;  // after a colon, possibly empty (an error)
  if (rest.starts_with('[')) {           // an IPv6 address: [::1] or [::1]:6379
    const auto close = rest.find(']');
    const std::string_view after = close == std::string_view::npos ? "" : rest.substr(close + 1);
    if (close == std::string_view::npos || (!after.empty() && after[0] != ':')) {
      error = "an IPv6 address must be written [address] or [address]:port";
      return std::nullopt;
    }
    host = rest.substr(1, close - 1);
    if (!after.empty()) port = after.substr(1);
  } else if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (port && (!parse_number(*port, e.port) || e.port == 0)) {
    error = "the port must be a number 1..65535";
    return std::nullopt;
  }
  if (host.empty()) {
    error = "the host is missing";
    return std::nullopt;
  }
  e.host = host;
  return e;
}

void validate(const cluster_config& config, std::vector<rule_error>& errors) {
  for (std::size_t i = 0; i < config.redis.size(); ++i) {
    std::string why;
    if (!parse_redis_url(config.redis[i], why)) {
      const std::string path = config.redis.size() == 1
                                   ? std::string("cluster.redis")
                                   : "cluster.redis[" + std::to_string(i) + "]";
      errors.push_back({path, why});
    }
  }
  if (config.name_space.empty()) {
    errors.push_back({"cluster.namespace", "must not be empty"});
  } else if (config.name_space.find_first_of("{}") != std::string::npos) {
    errors.push_back({"cluster.namespace", "must not contain { or } (they make Redis hash tags)"});
  }
  if (config.timeout_ms <= 0) {
    errors.push_back({"cluster.timeoutMs", "must be > 0"});
  }
}

}  // namespace floodgate

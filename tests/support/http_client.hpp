// A small blocking HTTP/1.1 client for black-box tests (real sockets on 127.0.0.1).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace floodgate::test {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_response {
  unsigned status = 0;  ///< 0: no response (connection closed, timeout)
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;
  /// The header's value; empty if absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

/** One keep-alive connection. Every call has a receive timeout (10 s by default), so a test
    fails instead of hanging. */
class http_connection {
 public:
  explicit http_connection(std::uint16_t port,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~http_connection();
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  bool connected() const;
  http_response get(std::string_view target, const header_list& headers = {});
  /// Sends raw bytes (malformed requests).
  void send_raw(std::string_view bytes);
  /// Reads one response; status 0 if the connection closed first. The answer to a HEAD has no
  /// body, whatever its Content-Length says: `head` reads it so.
  http_response read_response(bool head = false);
  /// True when the server closed the connection (reads end of stream) within the timeout.
  bool closed_by_peer();
  void close();

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// One request on a fresh connection (`Connection: close`).
http_response http_get(std::uint16_t port, std::string_view target,
                       const header_list& headers = {});

/// True when a TCP connection to 127.0.0.1:port can be opened.
bool can_connect(std::uint16_t port);

}  // namespace floodgate::test

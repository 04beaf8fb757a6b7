// The responses the middleware writes itself: blocked requests and failed handlers.
#pragma once

#include <floodgate/chain/block.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <string_view>

namespace floodgate::beast {

namespace http = boost::beast::http;

/// The header naming the reason of every blocked response.
inline constexpr std::string_view blocked_header = "X-Floodgate-Blocked";

/// The status a block answers with: 429 flow / param flow (and user slots), 503 degrade /
/// system, 403 authority.
http::status blocked_status(block_reason reason) noexcept;

/** The `Retry-After` seconds for a block: the ceiling of its retry hint, at least 1, for flow,
    param flow and degrade (until the next probe); 1 for system; 0 (no header) for authority. */
long retry_after_seconds(const block_info& block) noexcept;

/** The response to a blocked request (SPEC §4): status, `Retry-After`, `X-Floodgate-Blocked`
    and a JSON body `{"blocked":"flow","resource":"GET:/hello"}`. */
http::response<http::string_body> make_blocked_response(const block_info& block,
                                                        std::string_view resource,
                                                        unsigned version, bool keep_alive);

/// A small `application/json` error response `{"error":"<message>"}`.
http::response<http::string_body> make_error_response(http::status status,
                                                      std::string_view message, unsigned version,
                                                      bool keep_alive);

/** Makes `res` an answer to HEAD: the same status and fields, `Content-Length` the length of
    the body a GET would have carried (RFC 9110, section 8.6: a HEAD answer may send no other
    length), and no body: a keep-alive client would read one as the start of its next response.
    Call it once, last, on the answer with its body: prepare_payload() afterwards, or a second
    call, would set the length to 0. For an answer that a GET would not have got, use
    drop_body_and_length(). */
void drop_body(http::response<http::string_body>& res);

/** Makes `res` an answer that HEAD alone gets (405 where only GET is served, no route for
    HEAD): no body and no `Content-Length`, since a GET's answer and its length would have been
    another's. A client frames every answer to HEAD without one (RFC 9112, section 6.3). */
void drop_body_and_length(http::response<http::string_body>& res);

/// Appends `s` to `out` as the contents of a JSON string (quotes not included); a byte that
/// starts no well-formed UTF-8 sequence becomes U+FFFD, so the JSON stays valid UTF-8.
void append_json_escaped(std::string& out, std::string_view s);

}  // namespace floodgate::beast

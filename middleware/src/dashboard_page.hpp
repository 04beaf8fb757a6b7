// The dashboard page served at admin `GET /`, embedded at build time (middleware/dashboard/).
#pragma once

#include <string_view>

namespace floodgate::beast::detail {

/// The whole page: markup, style, Chart.js and the page's script, inline.
std::string_view dashboard_html() noexcept;
/// The Content-Security-Policy that lets exactly the page's own inline script and style run
/// and lets it connect only to its own origin.
std::string_view dashboard_csp() noexcept;

}  // namespace floodgate::beast::detail

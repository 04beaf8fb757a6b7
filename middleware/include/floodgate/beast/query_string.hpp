// Reading one parameter out of a request target's query string, or decoding a path segment.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace floodgate::beast {

/** The value of the first `name` parameter in the query of `target` (`/p?a=1&b=2`), percent- and
    `+`-decoded; nullopt when absent. A parameter without `=` has an empty value. Keys are
    compared after decoding. The result points into `target`, or into `scratch` when decoding
    changed it. */
std::optional<std::string_view> find_query_param(std::string_view target, std::string_view name,
                                                 std::string& scratch);

/** A path segment (a `path` parameter's value) percent-decoded, so that `/users/a%62` and
    `/users/ab` name the same value; `+` stays a plus, as in paths. A malformed escape is kept as
    is. The result points into `segment`, or into `scratch` when decoding changed it. */
std::string_view decode_path_segment(std::string_view segment, std::string& scratch);

}  // namespace floodgate::beast

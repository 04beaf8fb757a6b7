#include "config/document_reader.hpp"

#include <algorithm>
#include <string>
#include <tuple>

namespace floodgate::config::detail {

namespace {

/** Where the quoted scalar whose opening quote is `text[open]` closes: the index of its closing
    quote, or npos when the text ends inside it. Escapes (`\"`) and `''` are quotes inside. */
std::size_t closing_quote(std::string_view text, std::size_t open) {
  const char quote = text[open];
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escaped character, maybe a quote
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes
      } else {
        return i;
      }
    }
  }
  return std::string_view::npos;
}

}  // namespace

location location_of(const YAML::Node& node) noexcept {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

node_path node_path::key(std::string_view canonical_key, std::string_view actual_key) const {
  auto join = [](const std::string& parent, std::string_view k) {
    return parent.empty() ? std::string(k) : parent + "." + std::string(k);
  };
  return {join(canonical, canonical_key), join(actual, actual_key)};
}

node_path node_path::index(std::size_t i) const {
  const std::string suffix = "[" + std::to_string(i) + "]";
  return {canonical + suffix, actual + suffix};
}

document_reader::document_reader(std::string file, std::string_view text)
    : file_(std::move(file)), text_(text), bom_(text.starts_with("\xEF\xBB\xBF") ? 3 : 0) {}

bool document_reader::quote_closed(const YAML::Node& node) const {
  if (!node.IsScalar() || node.Tag() != "!") return true;
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.pos < 0) return true;
  std::size_t i = static_cast<std::size_t>(mark.pos) + bom_;
  if (i >= text_.size() || (text_[i] != '"' && text_[i] != '\'')) return true;
  return closing_quote(text_, i) != std::string_view::npos;
}

bool document_reader::colon_follows(const YAML::Node& key) const {
  const YAML::Mark mark = key.Mark();
  if (mark.is_null() || mark.pos < 0) return true;
  std::size_t i = static_cast<std::size_t>(mark.pos) + bom_;
  if (i >= text_.size()) return true;
  const auto ends_key = [&](std::size_t k) {  // a `:` followed by a space, a line end or EOF
    return text_[k] == ':' && (k + 1 == text_.size() || text_[k + 1] == ' ' ||
                               text_[k + 1] == '\t' || text_[k + 1] == '\r' ||
                               text_[k + 1] == '\n' || text_[k + 1] == ',' || text_[k + 1] == '}');
  };
  // An explicit key (`? key` with its `:` on a line of its own): yaml-cpp marks the scalar,
  // so look back for the `?`.
  if (text_[i] == '?') return true;
  for (std::size_t k = i; k > 0 && text_[k - 1] != '\n';) {
    --k;
    if (text_[k] == '?') return true;
    if (text_[k] != ' ' && text_[k] != '\t') break;
  }
  // Properties before the key (a tag, `!<tag:yaml.org,2002:str>` or `!!str`, an anchor `&a`).
  while (i < text_.size() && (text_[i] == '!' || text_[i] == '&')) {
    if (text_.compare(i, 2, "!<") == 0) {
      i = text_.find('>', i);
      if (i == std::string_view::npos) return true;  // yaml-cpp's to judge
      ++i;
    }
    for (; i < text_.size() && text_[i] != ' ' && text_[i] != '\t' && text_[i] != '\n'; ++i) {
    }
    for (; i < text_.size() && (text_[i] == ' ' || text_[i] == '\t'); ++i) {
    }
  }
  if (i >= text_.size()) return false;
  if (text_[i] == '"' || text_[i] == '\'') {
    i = closing_quote(text_, i);
    if (i == std::string_view::npos) return false;
    for (++i; i < text_.size() && (text_[i] == ' ' || text_[i] == '\t'); ++i) {
    }
    return i < text_.size() && text_[i] == ':';  // JSON: `"key":value`
  }
  // A plain key ends at its `:`, on its line; a line end, a comment or a flow delimiter first
  // means there is none.
  for (; i < text_.size(); ++i) {
    const char c = text_[i];
    if (ends_key(i)) return true;
    if (c == '\n' || c == '\r' || c == ',' || c == '}' || c == ']' ||
        (c == '#' && i > 0 && (text_[i - 1] == ' ' || text_[i - 1] == '\t'))) {
      return false;
    }
  }
  return false;
}

void document_reader::error(location at, std::string path, std::string message) {
  if (capped_) return;
  // Every error prints as FILE:LINE:COLUMN (SPEC §3); one about the file as a whole (unreadable,
  // too large, a syntax error yaml-cpp does not place) points at its start.
  if (at.line <= 0) at = {1, 1};
  if (errors_.size() == max_errors) {
    capped_ = true;
    errors_.push_back({file_, at.line, at.column, {}, "too many errors; stopping here"});
    return;
  }
  error_paths_.insert(path);
  errors_.push_back({file_, at.line, at.column, std::move(path), std::move(message)});
}

bool document_reader::has_error_on(const std::string& actual_path) const {
  return error_paths_.contains(actual_path);
}

void document_reader::remember(const node_path& path, location at) {
  places_.insert_or_assign(path.canonical, place{path.actual, at});
}

document_reader::located_path document_reader::resolve(std::string_view canonical) const {
  std::string prefix(canonical);
  while (!prefix.empty()) {
    if (auto it = places_.find(prefix); it != places_.end()) {
      return {it->second.actual + std::string(canonical.substr(prefix.size())), it->second.at};
    }
    // Drop the last component: `.key` or `[index]`.
    const auto cut = prefix.find_last_of(".[");
    if (cut == std::string::npos) break;
    prefix.resize(cut);
  }
  return {std::string(canonical), {}};
}

bool document_reader::spend(location at) {
  if (over_budget_) return false;
  if (++values_ <= max_values) return true;
  over_budget_ = true;
  error(at, {},
        "too many values (more than " + std::to_string(max_values) +
            ", counting each use of an alias)");
  return false;
}

std::vector<rule_file_error> document_reader::take_errors() {
  // The cap line stays last; everything before it is sorted by position.
  auto end = capped_ ? errors_.end() - 1 : errors_.end();
  std::stable_sort(errors_.begin(), end, [](const rule_file_error& a, const rule_file_error& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  return std::move(errors_);
}

}  // namespace floodgate::config::detail

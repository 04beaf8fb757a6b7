#include "config/map_reader.hpp"

#include "config/text_check.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace floodgate::config::detail {

namespace {

std::optional<double> parse_double(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::string_view describe(const YAML::Node& value) {
  if (value.IsSequence()) return "a list";
  if (value.IsMap()) return "a mapping";
  if (value.Tag() == "!") return "a quoted string";
  if (value.Tag() != "?") return "a tagged value";
  return "a scalar";
}

}  // namespace

map_reader::map_reader(document_reader& doc, const YAML::Node& map, node_path path,
                       std::vector<key_spec> keys)
    : doc_(doc), path_(std::move(path)), at_(location_of(map)), keys_(std::move(keys)) {
  doc_.remember(path_, at_);
  fields_.reserve(keys_.size());
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!doc_.spend(at_)) return;
    const location key_at = location_of(it->first);
    if (!it->first.IsScalar()) {
      doc_.error(key_at, path_.actual, "keys must be strings");
      continue;
    }
    if (!doc_.quote_closed(it->first)) {
      doc_.error(key_at, path_.actual, "unterminated quoted string");
      continue;
    }
    const std::string& name = it->first.Scalar();
    if (it->second.IsNull() && !doc_.colon_follows(it->first)) {
      doc_.error(key_at, path_.key(abbreviate(name), abbreviate(name)).actual,
                 "\"" + abbreviate(name) + "\" has no ':' after it (a half-written file?)");
      continue;
    }
    const key_spec* spec = nullptr;
    std::string_view spelled;
    for (const auto& k : keys_) {
      if (name == k.name || (!k.alias.empty() && name == k.alias)) {
        spec = &k;
        spelled = name == k.name ? k.name : k.alias;
        break;
      }
    }
    if (spec == nullptr) {
      doc_.error(key_at, path_.key(abbreviate(name), abbreviate(name)).actual,
                 "unknown key \"" + abbreviate(name) + "\"");
      continue;
    }
    if (const field* first = find(spec->name)) {
      const std::string message = first->spelled == spelled
                                      ? "duplicate key \"" + abbreviate(name) + "\" (first at line " +
                                            std::to_string(first->key_at.line) + ")"
                                      : "duplicate key: \"" + std::string(spelled) + "\" and \"" +
                                            std::string(first->spelled) + "\" are the same field";
      doc_.error(key_at, path_.key(abbreviate(name), abbreviate(name)).actual, message);
      continue;
    }
    fields_.push_back(field{spec, spelled, it->second, key_at});
    doc_.remember(path_of(spec->name), where(spec->name));
  }
}

const map_reader::field* map_reader::find(std::string_view key) const {
  for (const auto& f : fields_) {
    if (f.spec->name == key) return &f;
  }
  return nullptr;
}

const YAML::Node* map_reader::node(std::string_view key) const {
  const field* f = find(key);
  return f == nullptr || f->value.IsNull() ? nullptr : &f->value;
}

node_path map_reader::path_of(std::string_view key) const {
  if (const field* f = find(key)) return path_.key(key, f->spelled);
  std::string_view spelled = key;
  if (prefer_aliases_) {
    for (const auto& k : keys_) {
      if (k.name == key && !k.alias.empty()) spelled = k.alias;
    }
  }
  return path_.key(key, spelled);
}

location map_reader::where(std::string_view key) const {
  const field* f = find(key);
  if (f == nullptr) return at_;
  if (!f->value.IsNull()) {
    if (const location at = location_of(f->value); at.line != 0) return at;
  }
  return f->key_at.line != 0 ? f->key_at : at_;
}

void map_reader::error(std::string_view key, std::string message) {
  doc_.error(where(key), path_of(key).actual, std::move(message));
}

void map_reader::missing(std::string_view key) {
  doc_.error(at_, path_of(key).actual, "is required");
}

const YAML::Node* map_reader::present(std::string_view key, presence p) {
  const YAML::Node* n = node(key);
  if (n == nullptr) {
    if (p == presence::required) missing(key);
    return nullptr;
  }
  if (!doc_.quote_closed(*n)) {
    error(key, "unterminated quoted string");
    return nullptr;
  }
  return doc_.spend(where(key)) ? n : nullptr;
}

void map_reader::type_error(std::string_view key, const YAML::Node& value,
                            std::string_view wanted) {
  std::string message = "must be " + std::string(wanted) + ", not ";
  if (value.IsScalar() && value.Tag() == "?") {
    message += "\"" + abbreviate(value.Scalar()) + "\"";
  } else {
    message += describe(value);
  }
  error(key, std::move(message));
}

std::optional<std::string> map_reader::string(std::string_view key, presence p) {
  const YAML::Node* n = present(key, p);
  if (n == nullptr) return std::nullopt;
  if (!textual(*n)) return type_error(key, *n, "a string"), std::nullopt;
  if (!valid_utf8(n->Scalar())) {
    error(key, "must be valid UTF-8 (check the escapes)");
    return std::nullopt;
  }
  return n->Scalar();
}

std::optional<double> map_reader::number(std::string_view key, presence p) {
  const YAML::Node* n = present(key, p);
  if (n == nullptr) return std::nullopt;
  std::optional<double> v;
  if (plain(*n)) v = parse_double(n->Scalar());
  if (!v) type_error(key, *n, "a number");
  return v;
}

std::optional<double> map_reader::integral(std::string_view key, presence p) {
  const YAML::Node* n = present(key, p);
  if (n == nullptr) return std::nullopt;
  std::optional<double> v;
  if (plain(*n)) v = parse_double(n->Scalar());
  if (!v || std::trunc(*v) != *v) return type_error(key, *n, "an integer"), std::nullopt;
  return v;
}

std::optional<double> map_reader::whole_number(std::string_view key, presence p) {
  const std::optional<double> v = integral(key, p);
  if (!v) return std::nullopt;
  // Below 2^53 every integer is a double of its own (2^53 + 1 would read as 2^53).
  constexpr double exact = 9'007'199'254'740'992.0;
  if (std::fabs(*v) >= exact) {
    error(key, "must be an integer between -9007199254740991 and 9007199254740991");
    return std::nullopt;
  }
  return v;
}

std::optional<std::int32_t> map_reader::integer(std::string_view key, presence p) {
  const std::optional<double> v = integral(key, p);
  if (!v) return std::nullopt;
  if (*v < std::numeric_limits<std::int32_t>::min() ||
      *v > std::numeric_limits<std::int32_t>::max()) {
    error(key, "must be an integer between -2147483648 and 2147483647");
    return std::nullopt;
  }
  return static_cast<std::int32_t>(*v);
}

std::optional<bool> map_reader::boolean(std::string_view key) {
  const YAML::Node* n = present(key, presence::optional);
  if (n == nullptr) return std::nullopt;
  if (plain(*n)) {
    if (equals_ignoring_case(n->Scalar(), "true")) return true;
    if (equals_ignoring_case(n->Scalar(), "false")) return false;
  }
  type_error(key, *n, "true or false");
  return std::nullopt;
}

bool map_reader::plain(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

bool map_reader::textual(const YAML::Node& node) {
  return node.IsScalar() &&
         (node.Tag() == "?" || node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str");
}

std::string map_reader::abbreviate(std::string_view text) {
  constexpr std::size_t max = 60;
  std::size_t cut = text.size();
  if (text.size() > max) {
    // Cut on a UTF-8 character boundary.
    cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out;
  out.reserve(cut + 3);
  detail::append_printable(out, text.substr(0, cut), true);
  return cut < text.size() ? out + "..." : out;
}

bool map_reader::equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::optional<std::int64_t> map_reader::parse_integer(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace floodgate::config::detail

// Typed, strict access to one YAML mapping of a rule file (internal to the parser).
#pragma once

#include "config/document_reader.hpp"
#include "config/enum_names.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate::config::detail {

/// A key a mapping may hold; `alias` is another spelling of it (Sentinel's JSON name).
struct key_spec {
  std::string_view name;
  std::string_view alias = {};
};

/// Whether a field must be given. A null value (`key:`, `~`, JSON `null`) counts as not given.
enum class presence : std::uint8_t { optional, required };

/** Reads one mapping strictly. Construction reports keys that are not strings, unknown and
    duplicated; the accessors convert values, reporting wrong types and unknown enum names at the
    value's position. Every value read is remembered in the document_reader for later location.

    A YAML::Node is only ever copied into this reader (never assigned to: yaml-cpp's assignment
    writes through to the document). Not thread-safe, like yaml-cpp itself. */
class map_reader {
 public:
  /// `map` must be a mapping (the caller checks, to word its own message).
  map_reader(document_reader& doc, const YAML::Node& map, node_path path,
             std::initializer_list<key_spec> keys)
      : map_reader(doc, map, std::move(path), std::vector<key_spec>(keys)) {}
  map_reader(document_reader& doc, const YAML::Node& map, node_path path,
             std::vector<key_spec> keys);

  const node_path& path() const noexcept { return path_; }
  location where() const noexcept { return at_; }
  document_reader& doc() noexcept { return doc_; }

  /// True when `key` is given with a non-null value.
  bool has(std::string_view key) const { return node(key) != nullptr; }
  /// The value of `key`; null when absent or a YAML null.
  const YAML::Node* node(std::string_view key) const;
  /// True when `key` is given with no value (`flow:` and nothing after it, or `~`).
  bool given_empty(std::string_view key) const {
    const field* f = find(key);
    return f != nullptr && f->value.IsNull();
  }
  /// The path of `key` (in the file's spelling when given under its alias).
  node_path path_of(std::string_view key) const;
  /// Names absent keys by their alias (Sentinel's spelling) in messages, e.g. inside a pasted
  /// `paramFlowItemList` a missing `value` is reported as `object`.
  void prefer_aliases() noexcept { prefer_aliases_ = true; }
  /// The position of `key`'s value, else of the key, else of the mapping.
  location where(std::string_view key) const;

  /// Reports an error about `key`'s value.
  void error(std::string_view key, std::string message);
  /// Reports a missing required field at the mapping's position.
  void missing(std::string_view key);

  std::optional<std::string> string(std::string_view key, presence p = presence::optional);
  std::optional<double> number(std::string_view key, presence p = presence::optional);
  std::optional<std::int32_t> integer(std::string_view key, presence p = presence::optional);
  /// An integer held as a double (a Java `long` or `Integer` field whose type here is double):
  /// no fraction, and under 2^53 in magnitude so that it is exact and reads back as written.
  std::optional<double> whole_number(std::string_view key, presence p = presence::optional);
  std::optional<bool> boolean(std::string_view key);

  template <class Enum>
  std::optional<Enum> enumeration(std::string_view key, const enum_table<Enum>& table,
                                  presence p = presence::optional) {
    const YAML::Node* n = present(key, p);
    if (n == nullptr) return std::nullopt;
    if (!textual(*n)) return type_error(key, *n, "a name"), std::nullopt;
    const std::string& text = n->Scalar();
    for (const auto& e : table.names) {
      if (equals_ignoring_case(text, e.name)) return e.value;
    }
    if (table.numeric_codes) {
      if (auto code = parse_integer(text)) {
        for (const auto& e : table.names) {
          if (static_cast<std::int64_t>(e.value) != *code) continue;
          if (plain(*n)) return e.value;
          // Quoted, it is a string that only looks like the code (numbers refuse quotes too).
          error(key, "a code is a number: write " + abbreviate(text) + " without quotes, or " +
                         std::string(table.name_of(e.value)));
          return std::nullopt;
        }
      }
    }
    error(key, "unknown value \"" + abbreviate(text) + "\"; expected " + expected(table));
    return std::nullopt;
  }

  /// Whether `node` is an untagged plain scalar (numbers and booleans must be).
  static bool plain(const YAML::Node& node);
  /** Whether `node` is text: a plain or quoted scalar, or one tagged `!!str`. Another tag
      (`!!binary`, a local `!foo`) would be read as its undecoded text, so strings and names
      refuse it, as numbers refuse any tag. */
  static bool textual(const YAML::Node& node);
  /** `text` as a message quotes it: cut to a readable length, with `"`, `\` and control
      characters escaped (`\n`, `\x1b`), so a key or value from the file can neither end the
      quotes nor start a line of its own in the error output. */
  static std::string abbreviate(std::string_view text);

 private:
  struct field {
    const key_spec* spec;
    std::string_view spelled;  // points into spec
    YAML::Node value;
    location key_at;
  };

  const field* find(std::string_view key) const;
  /// `key`'s value when it is a plain number without a fraction (else a type error).
  std::optional<double> integral(std::string_view key, presence p);
  const YAML::Node* present(std::string_view key, presence p);
  void type_error(std::string_view key, const YAML::Node& value, std::string_view wanted);

  static bool equals_ignoring_case(std::string_view a, std::string_view b);
  static std::optional<std::int64_t> parse_integer(std::string_view text);

  template <class Enum>
  static std::string expected(const enum_table<Enum>& table) {
    std::string out;
    for (std::size_t i = 0; i < table.names.size(); ++i) {
      // Aliases are accepted but not advertised.
      if (table.name_of(table.names[i].value) != table.names[i].name) continue;
      if (!out.empty()) out += " | ";
      out += table.names[i].name;
      if (table.numeric_codes) {
        out += " (" + std::to_string(static_cast<int>(table.names[i].value)) + ")";
      }
    }
    return out;
  }

  document_reader& doc_;
  node_path path_;
  location at_;
  std::vector<key_spec> keys_;
  std::vector<field> fields_;
  bool prefer_aliases_ = false;
};

}  // namespace floodgate::config::detail

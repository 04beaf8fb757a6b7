// The state of reading one rule file: every error found, and where each value is in the file.
#pragma once

#include <floodgate/config/rule_file.hpp>

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace floodgate::config::detail {

/// A 1-based position in the file; {0, 0} when unknown.
struct location {
  int line = 0;
  int column = 0;
};

/// Where `node` starts, 1-based; {0, 0} when yaml-cpp has no position for it (implicit nulls).
location location_of(const YAML::Node& node) noexcept;

/** A value's path, twice: as the rule structs and validate() name it (`paramFlow[0].items[1]`)
    and as the file spells it (`paramFlow[0].paramFlowItemList[1]` when pasted from Sentinel). */
struct node_path {
  std::string canonical;
  std::string actual;

  node_path key(std::string_view canonical_key, std::string_view actual_key) const;
  node_path index(std::size_t i) const;
};

/** Collects the errors of one document and remembers where every value read was, so errors
    found later on plain rule values (by validate()) can be located. Not thread-safe. */
class document_reader {
 public:
  /// More errors than this end the report with one "too many errors" line.
  static constexpr std::size_t max_errors = 1000;
  /// Values read per document, aliases expanded: bounds time and memory whatever the input.
  static constexpr std::size_t max_values = 400'000;

  /// `text`, the document's bytes, must outlive the reader.
  document_reader(std::string file, std::string_view text);

  const std::string& file() const noexcept { return file_; }

  /** False when `node` is a quoted scalar that the file ends inside: yaml-cpp 0.7 accepts a
      quote left open at the end of the file (a half-written file) as if it were closed. */
  bool quote_closed(const YAML::Node& node) const;

  /** False when the mapping key `key` has no `:` after it: yaml-cpp 0.7 reads a bare word on
      the last line of a block mapping (`degrade` where `degrade:` was being written) as a key
      with a null value instead of a syntax error. */
  bool colon_follows(const YAML::Node& key) const;

  /// Records an error; `path` as the file spells it, empty for file-level errors.
  void error(location at, std::string path, std::string message);
  /// Whether an error was already recorded for `actual_path`.
  bool has_error_on(const std::string& actual_path) const;
  std::size_t error_count() const noexcept { return errors_.size(); }

  /// Remembers where the value at `path` is.
  void remember(const node_path& path, location at);

  /// Whether the file holds a value at this canonical path itself (not only at an ancestor).
  bool has_value_at(const std::string& canonical) const { return places_.contains(canonical); }
  /// A canonical path (from validate()) translated to the file's spelling, and its location.
  struct located_path {
    std::string path;
    location at;
  };
  /// Resolves the longest remembered prefix of `canonical`; the rest is kept as written.
  located_path resolve(std::string_view canonical) const;

  /** Counts one value read. Returns false, after recording one error, once the document holds
      more than max_values (e.g. aliases multiplying a large list). */
  bool spend(location at);
  /// True once reading should stop: the value budget or the error cap is exhausted.
  bool exhausted() const noexcept { return over_budget_ || capped_; }

  /// The errors, sorted by position (unlocated first).
  std::vector<rule_file_error> take_errors();

 private:
  struct place {
    std::string actual;
    location at;
  };

  std::string file_;
  std::string_view text_;
  std::size_t bom_;  // yaml-cpp's positions do not count a byte-order mark
  std::vector<rule_file_error> errors_;
  std::unordered_set<std::string> error_paths_;
  std::unordered_map<std::string, place> places_;
  std::size_t values_ = 0;
  bool over_budget_ = false;
  bool capped_ = false;
};

}  // namespace floodgate::config::detail

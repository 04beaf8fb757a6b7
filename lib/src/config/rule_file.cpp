#include <floodgate/config/rule_file.hpp>

#include "config/document_reader.hpp"
#include "config/file_text.hpp"
#include "config/rule_sections.hpp"
#include "config/text_check.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <new>
#include <sstream>

namespace floodgate::config {

namespace {

using detail::clean_rules;
using detail::document_reader;
using detail::location;

/** Runs every rule type's own validate() — the one place where values are checked — and
    reports its problems at the offending values. In a rule that also has schema errors (a wrong
    type, an unknown enum name), defaults stand in for the bad values, so only problems of values
    that are in the file and were read cleanly are reported: no follow-on errors. */
void validate_rules(document_reader& doc, const rule_set& rules, const clean_rules& clean) {
  std::vector<rule_error> errors;
  validate(rules, errors);
  const auto is_clean = [&](std::string_view path) {
    for (const auto& [section, ok] :
         {std::pair{std::string_view{"flow"}, &clean.flow}, {"degrade", &clean.degrade},
          {"authority", &clean.authority}, {"system", &clean.system},
          {"paramFlow", &clean.param_flow}, {"hotKeys", &clean.hot_keys}}) {
      if (path.size() <= section.size() + 2 || path.substr(0, section.size()) != section ||
          path[section.size()] != '[') {
        continue;
      }
      std::size_t k = 0;
      const char* first = path.data() + section.size() + 1;
      const auto [end, ec] = std::from_chars(first, path.data() + path.size(), k);
      return ec == std::errc{} && k < ok->size() && (*ok)[k];
    }
    return true;
  };
  // A rule the file got wrong elsewhere may hold defaults where its values failed to read, so
  // an error about a value the file does not hold is left out for it — unless what made that
  // value required was read from the file without error: a refResource a relate or chain
  // strategy needs.
  const auto required_by_the_file = [&](std::string_view path) {
    constexpr std::string_view ref = ".refResource";
    if (path.size() <= ref.size() || path.substr(path.size() - ref.size()) != ref) return false;
    const std::string strategy = std::string(path.substr(0, path.size() - ref.size())) + ".strategy";
    return doc.has_value_at(strategy) && !doc.has_error_on(doc.resolve(strategy).path);
  };
  for (const rule_error& e : errors) {
    if (!is_clean(e.path) && !doc.has_value_at(e.path) && !required_by_the_file(e.path)) {
      continue;  // a default, not the file's
    }
    auto resolved = doc.resolve(e.path);
    if (doc.has_error_on(resolved.path)) continue;  // already said, in schema terms
    doc.error(resolved.at, std::move(resolved.path), e.message);
  }
}

/// Thrown by document_starts at the first node past document_reader::max_values.
struct too_many_nodes {
  location at;
};

/** Notes where documents start and counts the nodes, before YAML::Load builds them: a tree of
    yaml-cpp nodes costs a few hundred bytes a node, so a large file of tiny values (`[0,0,...]`)
    must be refused before one is built. */
class document_starts final : public YAML::EventHandler {
 public:
  std::vector<location> starts;

  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark.is_null() ? location{} : location{mark.line + 1, mark.column + 1});
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    count(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    count(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    count(mark);
  }
  void OnMapEnd() override {}

 private:
  void count(const YAML::Mark& mark) {
    // Keys are nodes too: a mapping entry is two, where the reader counts one value.
    if (++nodes_ > 2 * document_reader::max_values) {
      throw too_many_nodes{mark.is_null() ? location{} : location{mark.line + 1, mark.column + 1}};
    }
  }
  std::size_t nodes_ = 0;
};

/** Where a second document starts, if any. Counted with a bounded parse instead of
    YAML::LoadAll: yaml-cpp 0.7 never consumes a stray top-level `,` and LoadAll then yields
    empty documents forever (`,e` or `[1],` hang it, allocating without bound). Throws
    YAML::Exception on syntax errors anywhere in the text, too_many_nodes past the node cap. */
std::optional<location> second_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  document_starts handler;
  for (int i = 0; i < 2 && parser.HandleNextDocument(handler); ++i) {
  }
  if (handler.starts.size() < 2) return std::nullopt;
  return handler.starts[1];
}

parse_result finish(document_reader& doc, std::optional<rule_set> rules) {
  parse_result result;
  result.errors = doc.take_errors();
  if (result.errors.empty()) result.rules = std::move(rules);
  return result;
}

}  // namespace

parse_result parse_rules(std::string_view text, std::string_view file_name) {
  document_reader doc{std::string(file_name), text};
  if (text.size() > max_rule_file_bytes) {
    doc.error({}, {},
              "file is too large (" + std::to_string(text.size()) + " bytes; the limit is " +
                  std::to_string(max_rule_file_bytes) + ")");
    return finish(doc, std::nullopt);
  }
  if (auto problem = detail::check_text(text)) {
    doc.error(problem->at, {}, std::move(problem->message));
    return finish(doc, std::nullopt);
  }
  constexpr std::string_view empty_message =
      "file is empty (a half-written file?); write {} or flow: [] for no rules";
  if (detail::blank_or_comments(text)) {
    doc.error({1, 1}, {}, std::string(empty_message));
    return finish(doc, std::nullopt);
  }
  rule_set rules;
  try {
    const std::string copy(text);
    if (const auto second = second_document(copy)) {
      doc.error(*second, {},
                "unexpected content after the document (one YAML document per rule file)");
      return finish(doc, std::nullopt);
    }
    const YAML::Node root = YAML::Load(copy);
    if (root.IsNull()) {
      doc.error({1, 1}, {}, std::string(empty_message));
    } else if (!root.IsMap()) {
      doc.error(detail::location_of(root), {},
                "must be a mapping of rule sections (flow, degrade, authority, system, "
                "paramFlow, hotKeys)");
    } else {
      clean_rules clean;
      detail::read_rule_document(doc, root, rules, clean);
      if (!doc.exhausted()) validate_rules(doc, rules, clean);
    }
  } catch (const too_many_nodes& e) {
    doc.error(e.at, {},
              "too many values (more than " + std::to_string(document_reader::max_values) +
                  ", counting each use of an alias)");
  } catch (const YAML::DeepRecursion& e) {
    // Valid YAML, only deeper than the parser goes (yaml-cpp says "bad file").
    doc.error(e.mark.is_null() ? location{} : location{e.mark.line + 1, e.mark.column + 1}, {},
              "values nested too deeply for the YAML parser (no rule file needs this)");
  } catch (const YAML::Exception& e) {
    const location at =
        e.mark.is_null() ? location{} : location{e.mark.line + 1, e.mark.column + 1};
    doc.error(at, {}, "YAML syntax error: " + e.msg);
  } catch (const std::bad_alloc&) {
    doc.error({}, {}, "out of memory while parsing");
  }
  return finish(doc, std::move(rules));
}

parse_result read_rule_file(const std::string& path) {
  detail::file_text file = detail::read_file_text(path);
  if (!file.ok()) {
    document_reader doc{path, {}};
    doc.error({}, {}, std::move(file.error));
    return finish(doc, std::nullopt);
  }
  return parse_rules(file.text, path);
}

}  // namespace floodgate::config

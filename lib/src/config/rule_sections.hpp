// Reading the sections of a rule file (flow, degrade, authority, system, paramFlow, hotKeys) into
// rules.
#pragma once

#include "config/document_reader.hpp"

#include <floodgate/rules/rule_set.hpp>

#include <yaml-cpp/yaml.h>

#include <vector>

namespace floodgate::config::detail {

/// For each rule read, whether it was read without error (only those go on to validate()).
struct clean_rules {
  std::vector<bool> flow, degrade, authority, system, param_flow, hot_keys;
};

/** Reads the document root (a mapping of sections) into `out`, reporting every schema error:
    unknown and duplicate keys, wrong types, unknown enum values, out-of-range numbers, missing
    required fields and inconsistent combinations. */
void read_rule_document(document_reader& doc, const YAML::Node& root, rule_set& out,
                        clean_rules& clean);

}  // namespace floodgate::config::detail

// libFuzzer target: arbitrary bytes into the rule-file parser. Beyond "no crash, no leak, no
// hang", it checks the parser's promises: a rejected input says why, and accepted rules survive
// a round trip through to_yaml and to_json.
#include <floodgate/config/rule_file.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace floodgate::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const parse_result result = parse_rules(text, "fuzz.yaml");
  if (!result.ok()) {
    require(!result.errors.empty());
    require(!result.error_text().empty());
    return 0;
  }
  for (const std::string& written : {to_yaml(*result.rules), to_json(*result.rules)}) {
    const parse_result again = parse_rules(written, "written.yaml");
    require(again.ok());
    require(*again.rules == *result.rules);
  }
  return 0;
}

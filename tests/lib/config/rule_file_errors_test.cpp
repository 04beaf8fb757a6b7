// Bad rule files: every kind of error is reported at the offending value, and changes nothing.
#include <floodgate/config/rule_file.hpp>
#include <floodgate/config/rule_file_watcher.hpp>
#include <floodgate/engine/engine.hpp>

#include "lib/config/temp_dir.hpp"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <filesystem>
#include <string>

namespace floodgate::config {
namespace {

enum class file_kind { text, directory, huge, missing };

struct bad_input {
  const char* name;
  std::string text;
  int line;
  int column;
  const char* path;
  const char* message;  ///< expected prefix
  file_kind kind = file_kind::text;
};

std::ostream& operator<<(std::ostream& os, const bad_input& b) { return os << b.name; }

const bad_input bad_inputs[] = {
    // The file as a whole.
    {"Empty", "", 1, 1, "", "file is empty"},
    {"OnlyCommentsAndBlanks", "# rules go here\n\n   \n# later\n", 1, 1, "", "file is empty"},
    // Valid YAML that yaml-cpp will not parse: said as such, not as "bad file".
    {"NestedTooDeeply", "flow: " + std::string(600, '[') + std::string(600, ']') + "\n", 1, 1207,
     "", "values nested too deeply for the YAML parser"},
    {"BinaryGarbage",
     std::string("\x7f"
                 "ELF\x02\x01\x01\0\0\0",
                 10),
     1, 1, "", "not a text file: control character 0x7F"},
    {"NulByteAfterText", std::string("flow: []\n  \0x", 13), 2, 3, "",
     "not a text file: control character 0x00"},
    {"InvalidUtf8", "flow: []\n# caf\xe9\n", 2, 6, "", "not a text file: invalid UTF-8"},
    {"Directory", "", 1, 1, "", "is a directory", file_kind::directory},
    {"HundredMegabytes", "", 1, 1, "", "file is too large (104857600 bytes", file_kind::huge},
    {"MissingFile", "", 1, 1, "", "cannot open: No such file or directory", file_kind::missing},
    // YAML syntax.
    {"UnclosedFlowSequence", "flow: [{resource: a, count: 1}\n", 2, 1, "",
     "YAML syntax error: end of sequence flow not found"},
    {"MapValueInPlainScalar", "flow:\n  - resource: a: b\n", 2, 16, "",
     "YAML syntax error: illegal map value"},
    // yaml-cpp 0.7 takes a quote left open at the end of the file as closed.
    {"UnterminatedQuoteAtEndOfFile", "flow:\n  - count: 1\n    resource: \"GET:/hello\n", 3, 15,
     "flow[0].resource", "unterminated quoted string"},
    {"LoneSurrogateEscape", "flow:\n  - {resource: \"\\uD800\", count: 1}\n", 2, 23, "",
     "YAML syntax error: invalid unicode: 55296"},
    {"TwoDocuments", "flow: []\n---\ndegrade: []\n", 2, 1, "",
     "unexpected content after the document (one YAML document per rule file)"},
    // yaml-cpp's LoadAll loops forever on these (a stray top-level comma); found by fuzzing.
    {"StrayCommaFirst", ",e", 1, 1, "", "unexpected content after the document"},
    {"StrayCommaAfterAFlowSequence", "[1],", 1, 4, "", "unexpected content after the document"},
    {"RootIsAList", "- resource: a\n  count: 1\n", 1, 1, "", "must be a mapping of rule sections"},
    {"ExplicitNullDocument", "~\n", 1, 1, "", "file is empty"},
    // Structure.
    {"UnknownSection", "flows: []\n", 1, 1, "flows", "unknown key \"flows\""},
    {"DuplicateSection", "flow: []\ndegrade: []\nflow: []\n", 3, 1, "flow",
     "duplicate key \"flow\" (first at line 1)"},
    {"SectionIsNotAList", "flow: {resource: a}\n", 1, 7, "flow", "must be a list of rules"},
    {"RuleIsNotAMapping", "flow:\n  - GET:/hello\n", 2, 5, "flow[0]",
     "must be a mapping (one rule)"},
    {"KeyIsNotAString", "flow:\n  - {[name]: x, resource: a, count: 1}\n", 2, 6, "flow[0]",
     "keys must be strings"},
    {"SelfReferencingAlias", "flow: &loop [*loop]\n", 1, 7, "flow[0]",
     "must be a mapping (one rule)"},
    // flow.
    {"FlowUnknownKey", "flow:\n  - resource: a\n    count: 1\n    burst: 3\n", 4, 5,
     "flow[0].burst", "unknown key \"burst\""},
    {"FlowDuplicateKey", "flow:\n  - resource: a\n    count: 1\n    count: 2\n", 4, 5,
     "flow[0].count", "duplicate key \"count\" (first at line 3)"},
    {"FlowCountBeyondAnyLimit", "flow:\n  - {resource: a, count: 1e20}\n", 2, 26, "flow[0].count",
     "must be at most 1e11"},
    {"FlowMissingCount", "flow:\n  - resource: a\n", 2, 5, "flow[0].count", "is required"},
    {"FlowMissingResource", "flow:\n  - count: 1\n", 2, 5, "flow[0].resource", "is required"},
    {"FlowEmptyResource", "flow:\n  - {resource: \"\", count: 1}\n", 2, 16, "flow[0].resource",
     "must not be empty"},
    {"FlowNegativeCount", "flow:\n  - resource: a\n    count: 1\n  - resource: b\n    count: -5\n",
     5, 12, "flow[1].count", "must be >= 0"},
    // An audit: a string with another tag than !!str was taken as its undecoded text.
    {"FlowResourceBinary", "flow:\n  - {resource: !!binary aGVsbG8=, count: 1}\n", 2, 16,
     "flow[0].resource", "must be a string, not a tagged value"},
    {"FlowLimitAppLocalTag", "flow:\n  - {resource: a, count: 1, limitApp: !foo x}\n", 2, 39,
     "flow[0].limitApp", "must be a string, not a tagged value"},
    {"FlowGradeLocalTag", "flow:\n  - {resource: a, count: 1, grade: !foo qps}\n", 2, 36,
     "flow[0].grade", "must be a name, not a tagged value"},
    // A review: the URL of the cluster section was still read whatever its tag.
    {"ClusterRedisUrlLocalTag", "cluster:\n  redis: !foo redis://127.0.0.1:6379\n", 2, 10,
     "cluster.redis", "must be a redis:// URL"},
    {"FlowGradeCodeQuoted", "flow:\n  - {resource: a, count: 1, grade: \"0\"}\n", 2, 36,
     "flow[0].grade", "a code is a number: write 0 without quotes, or concurrency"},
    {"FlowCountQuoted", "flow:\n  - {resource: a, count: \"10\"}\n", 2, 26, "flow[0].count",
     "must be a number, not a quoted string"},
    {"FlowCountNotANumber", "flow:\n  - {resource: a, count: ten}\n", 2, 26, "flow[0].count",
     "must be a number, not \"ten\""},
    {"FlowCountInfinite", "flow:\n  - {resource: a, count: .inf}\n", 2, 26, "flow[0].count",
     "must be a number"},
    {"FlowCountIsAList", "flow:\n  - {resource: a, count: [1]}\n", 2, 26, "flow[0].count",
     "must be a number, not a list"},
    {"FlowUnknownGrade", "flow:\n  - {resource: a, count: 1, grade: qpss}\n", 2, 36,
     "flow[0].grade", "unknown value \"qpss\"; expected qps (1) | concurrency (0)"},
    {"FlowUnknownGradeCode", "flow:\n  - {resource: a, count: 1, grade: 7}\n", 2, 36,
     "flow[0].grade", "unknown value \"7\""},
    {"FlowUnknownControlBehavior", "flow:\n  - {resource: a, count: 1, controlBehavior: queue}\n",
     2, 46, "flow[0].controlBehavior",
     "unknown value \"queue\"; expected reject (0) | warm_up (1)"},
    {"FlowRelateWithoutRefResource", "flow:\n  - resource: a\n    count: 1\n    strategy: relate\n",
     2, 5, "flow[0].refResource", "is required when strategy is relate"},
    {"FlowChainWithEmptyRefResource",
     "flow:\n  - {resource: a, count: 1, strategy: 2, refResource: \"\"}\n", 2, 55,
     "flow[0].refResource", "is required when strategy is chain"},
    {"FlowWarmUpPeriodZero",
     "flow:\n  - {resource: a, count: 1, controlBehavior: warm_up, warmUpPeriodSec: 0}\n", 2, 72,
     "flow[0].warmUpPeriodSec", "must be > 0"},
    {"FlowWarmUpPeriodNegativeWithoutWarmUp",
     "flow:\n  - {resource: a, count: 1, warmUpPeriodSec: -3}\n", 2, 46, "flow[0].warmUpPeriodSec",
     "must be >= 0"},
    {"FlowWarmUpPeriodFractional", "flow:\n  - {resource: a, count: 1, warmUpPeriodSec: 2.5}\n", 2,
     46, "flow[0].warmUpPeriodSec", "must be an integer, not \"2.5\""},
    {"FlowWarmUpPeriodOutOfRange", "flow:\n  - {resource: a, count: 1, warmUpPeriodSec: 1e12}\n", 2,
     46, "flow[0].warmUpPeriodSec", "must be an integer between"},
    {"FlowThrottlingWithoutQueueing",
     "flow:\n  - {resource: a, count: 1, controlBehavior: throttling, maxQueueingTimeMs: 0}\n", 2,
     77, "flow[0].maxQueueingTimeMs", "must be > 0 for throttling"},
    {"FlowNegativeQueueing", "flow:\n  - {resource: a, count: 1, maxQueueingTimeMs: -1}\n", 2, 48,
     "flow[0].maxQueueingTimeMs", "must be >= 0"},
    {"FlowConcurrencyWithWarmUp",
     "flow:\n  - {resource: a, count: 1, grade: concurrency, controlBehavior: warm_up}\n", 2, 66,
     "flow[0].controlBehavior", "must be reject for concurrency rules"},
    {"FlowDryRunNotABoolean", "flow:\n  - {resource: a, count: 1, dryRun: yes}\n", 2, 37,
     "flow[0].dryRun", "must be true or false, not \"yes\""},
    {"FlowClusterMode", "flow:\n  - {resource: a, count: 1, clusterMode: true}\n", 2, 42,
     "flow[0].clusterMode", "needs a cluster: section (the Redis that holds the shared windows)"},
    {"FlowRegexResource", "flow:\n  - {resource: \"a.*\", count: 1, regex: true}\n", 2, 40,
     "flow[0].regex", "regular-expression resources are not supported"},
    // degrade.
    {"DegradeMissingTimeWindow", "degrade:\n  - resource: a\n    count: 1\n", 2, 5,
     "degrade[0].timeWindow", "is required"},
    {"DegradeZeroTimeWindow", "degrade:\n  - {resource: a, count: 1, timeWindow: 0}\n", 2, 41,
     "degrade[0].timeWindow", "must be > 0"},
    {"DegradeUnknownGrade", "degrade:\n  - {resource: a, count: 1, timeWindow: 1, grade: slow}\n",
     2, 51, "degrade[0].grade", "unknown value \"slow\"; expected slow_request_ratio (0)"},
    {"DegradeErrorRatioAboveOne",
     "degrade:\n  - {resource: a, grade: error_ratio, count: 1.5, timeWindow: 1}\n", 2, 46,
     "degrade[0].count", "must be between 0 and 1 for error_ratio"},
    {"DegradeSlowRatioThresholdAboveOne",
     "degrade:\n  - {resource: a, count: 100, timeWindow: 1, slowRatioThreshold: 2}\n", 2, 66,
     "degrade[0].slowRatioThreshold", "must be between 0 and 1"},
    {"DegradeZeroMinRequestAmount",
     "degrade:\n  - {resource: a, count: 1, timeWindow: 1, minRequestAmount: 0}\n", 2, 62,
     "degrade[0].minRequestAmount", "must be > 0"},
    {"AdaptiveKOfOne", "degrade:\n  - {resource: a, grade: adaptive, k: 1}\n", 2, 39,
     "degrade[0].k", "must be a finite number > 1"},
    {"AdaptiveKNotANumber", "degrade:\n  - {resource: a, grade: adaptive, k: fast}\n", 2, 39,
     "degrade[0].k", "must be a number"},
    {"AdaptiveZeroStatInterval",
     "degrade:\n  - {resource: a, grade: adaptive, statIntervalMs: 0}\n", 2, 52,
     "degrade[0].statIntervalMs", "must be > 0"},
    {"AdaptiveWithATimeWindow", "degrade:\n  - {resource: a, grade: adaptive, timeWindow: 10}\n", 2,
     48, "degrade[0].timeWindow", "does not apply to grade adaptive"},
    {"AdaptiveWithACount", "degrade:\n  - {resource: a, grade: adaptive, count: 0.5}\n", 2, 43,
     "degrade[0].count", "does not apply to grade adaptive"},
    {"KOnAnErrorRatioBreaker",
     "degrade:\n  - {resource: a, grade: error_ratio, count: 0.5, timeWindow: 1, k: 3}\n", 2, 69,
     "degrade[0].k", "applies to grade adaptive only"},
    {"DegradeLimitAppForAnOrigin",
     "degrade:\n  - {resource: a, count: 1, timeWindow: 1, limitApp: billing}\n", 2, 54,
     "degrade[0].limitApp", "is not supported on this rule type"},
    // authority.
    {"AuthorityUnknownStrategy", "authority:\n  - {resource: a, limitApp: x, strategy: grey}\n", 2,
     42, "authority[0].strategy", "unknown value \"grey\"; expected white (0) | black (1)"},
    {"AuthorityMissingLimitApp", "authority:\n  - resource: a\n    strategy: black\n", 2, 5,
     "authority[0].limitApp", "is required"},
    {"AuthoritySecondRuleForAResource",
     "authority:\n  - {resource: a, limitApp: x}\n  - {resource: a, limitApp: y}\n", 3, 16,
     "authority[1].resource", "a resource has at most one authority rule (first at authority[0])"},
    // system.
    {"SystemCpuUsageAboveOne", "system:\n  - highestCpuUsage: 1.5\n", 2, 22,
     "system[0].highestCpuUsage", "must be between 0 and 1, or -1 (off)"},
    {"SystemQpsNotANumber", "system:\n  - {qps: many}\n", 2, 11, "system[0].qps",
     "must be a number, not \"many\""},
    // Integers in Sentinel (long), so no fraction: 2.5 threads was accepted (an audit), and a
    // value past 2^53 read back as another number.
    {"SystemMaxThreadFractional", "system:\n  - {maxThread: 2.5}\n", 2, 17, "system[0].maxThread",
     "must be an integer, not \"2.5\""},
    {"SystemAvgRtFractional", "system:\n  - {avgRt: 1.5}\n", 2, 13, "system[0].avgRt",
     "must be an integer, not \"1.5\""},
    {"SystemAvgRtAtTwoToThe53PlusOne", "system:\n  - {avgRt: 9007199254740993}\n", 2, 13,
     "system[0].avgRt", "must be an integer between -9007199254740991 and 9007199254740991"},
    {"SystemAvgRtPastTwoToThe53", "system:\n  - {avgRt: 9223372036854775807}\n", 2, 13,
     "system[0].avgRt", "must be an integer between -9007199254740991 and 9007199254740991"},
    {"SystemRuleWithResource", "system:\n  - {resource: a, qps: 10}\n", 2, 16, "system[0].resource",
     "system rules are global"},
    // Found by the rule types' own validate(), located through the paths it reports.
    {"ModuleFlowBlankResource", "flow:\n  - {resource: \"  \", count: 1}\n", 2, 16,
     "flow[0].resource", "must not be empty"},
    {"ModuleAuthorityLimitAppWithoutOrigins", "authority:\n  - {resource: a, limitApp: \",\"}\n", 2,
     29, "authority[0].limitApp", "must name at least one origin"},
    {"ModuleSystemNegativeOtherThanOff", "system:\n  - {maxThread: -5}\n", 2, 17,
     "system[0].maxThread", "must be >= 0, or -1 (off)"},
    // paramFlow.
    {"ParamFlowWithoutParamOrIndex", "paramFlow:\n  - {resource: a, count: 1}\n", 2, 5,
     "paramFlow[0]", "one of param or paramIdx is required"},
    // A choice the file made but got wrong is one error, not also "none was given".
    {"ParamFlowParamIdxFractional", "paramFlow:\n  - {resource: a, paramIdx: 0.5, count: 5}\n", 2,
     29, "paramFlow[0].paramIdx", "must be an integer"},
    {"ParamFlowParamNotAMapping", "paramFlow:\n  - {resource: a, param: origin, count: 5}\n", 2, 26,
     "paramFlow[0].param", "must be a mapping"},
    {"HotKeysParamIdxOutOfRange", "hotKeys:\n  - {resource: a, paramIdx: 1e20, threshold: 1}\n", 2,
     29, "hotKeys[0].paramIdx", "must be an integer"},
    {"ParamFlowWithParamAndIndex",
     "paramFlow:\n  - {resource: a, count: 1, paramIdx: 0, param: {from: origin}}\n", 2, 39,
     "paramFlow[0].paramIdx", "param and paramIdx are mutually exclusive"},
    {"ParamFlowUnknownSource",
     "paramFlow:\n  - resource: a\n    count: 1\n    param: {from: cookie, name: id}\n", 4, 19,
     "paramFlow[0].param.from", "unknown value \"cookie\"; expected header | query"},
    {"ParamFlowHeaderWithoutName",
     "paramFlow:\n  - resource: a\n    count: 1\n    param: {from: header}\n", 4, 12,
     "paramFlow[0].param.name", "is required when from is header, query or path"},
    {"ParamFlowWarmUp",
     "paramFlow:\n  - {resource: a, count: 1, paramIdx: 0, controlBehavior: warm_up}\n", 2, 59,
     "paramFlow[0].controlBehavior", "must be reject or throttling"},
    {"ParamFlowZeroDuration",
     "paramFlow:\n  - {resource: a, count: 1, paramIdx: 0, durationInSec: 0}\n", 2, 57,
     "paramFlow[0].durationInSec", "must be > 0"},
    {"ParamFlowNegativeItemCount",
     "paramFlow:\n  - resource: a\n    count: 1\n    paramIdx: 0\n"
     "    items: [{value: vip, count: -1}]\n",
     5, 33, "paramFlow[0].items[0].count", "must be >= 0"},
    {"ParamFlowFractionalItemCount",
     "paramFlow:\n  - resource: a\n    count: 1\n    paramIdx: 0\n"
     "    items: [{value: vip, count: 1.5}]\n",
     5, 33, "paramFlow[0].items[0].count", "must be an integer, not \"1.5\""},
    {"ParamFlowDuplicateItemValue",
     "paramFlow:\n  - resource: a\n    count: 1\n    paramIdx: 0\n"
     "    items: [{value: vip, count: 5}, {value: vip, count: 6}]\n",
     5, 45, "paramFlow[0].items[1].value",
     "duplicate value \"vip\" (first at paramFlow[0].items[0])"},
    {"SentinelParamFlowItemWithoutCount",
     "paramFlow: [{\"resource\": \"a\", \"count\": 1, \"paramIdx\": 0,\n"
     "  \"paramFlowItemList\": [{\"object\": \"vip\", \"classType\": \"java.lang.String\"}]}]\n",
     2, 25, "paramFlow[0].paramFlowItemList[0].count", "is required"},
    {"SentinelParamFlowItemWithoutObject",
     "paramFlow: [{\"resource\": \"a\", \"count\": 1, \"paramIdx\": 0,\n"
     "  \"paramFlowItemList\": [{\"count\": 5}]}]\n",
     2, 25, "paramFlow[0].paramFlowItemList[0].object", "is required"},
    {"ItemsAndParamFlowItemListTogether",
     "paramFlow:\n  - resource: a\n    count: 1\n    paramIdx: 0\n    items: []\n"
     "    paramFlowItemList: []\n",
     6, 5, "paramFlow[0].paramFlowItemList",
     "duplicate key: \"paramFlowItemList\" and \"items\" are the same field"},
    // hotKeys.
    {"HotKeysWindowZero", "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: 1, windowSec: 0}\n",
     2, 57, "hotKeys[0].windowSec", "must be between 1 and 86400"},
    {"HotKeysWindowLongerThanADay",
     "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: 1, windowSec: 90000}\n", 2, 57,
     "hotKeys[0].windowSec", "must be between 1 and 86400"},
    {"HotKeysWindowFractional",
     "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: 1, windowSec: 2.5}\n", 2, 57,
     "hotKeys[0].windowSec", "must be an integer"},
    {"HotKeysTopZero", "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: 1, top: 0}\n", 2, 51,
     "hotKeys[0].top", "must be between 1 and 1000"},
    {"HotKeysTopTooLarge", "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: 1, top: 5000}\n", 2,
     51, "hotKeys[0].top", "must be between 1 and 1000"},
    {"HotKeysNegativeThreshold", "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: -1}\n", 2, 43,
     "hotKeys[0].threshold", "must be a finite number >= 0"},
    {"HotKeysThresholdNotANumber", "hotKeys:\n  - {resource: a, paramIdx: 0, threshold: many}\n", 2,
     43, "hotKeys[0].threshold", "must be a number, not \"many\""},
    {"HotKeysMissingThreshold", "hotKeys:\n  - {resource: a, paramIdx: 0}\n", 2, 5,
     "hotKeys[0].threshold", "is required"},
    {"HotKeysMissingResource", "hotKeys:\n  - {paramIdx: 0, threshold: 1}\n", 2, 5,
     "hotKeys[0].resource", "is required"},
    {"HotKeysEmptyResource", "hotKeys:\n  - {resource: \"\", paramIdx: 0, threshold: 1}\n", 2, 16,
     "hotKeys[0].resource", "must not be empty"},
    {"HotKeysWithoutParamOrIndex", "hotKeys:\n  - {resource: a, threshold: 1}\n", 2, 5,
     "hotKeys[0]", "one of param or paramIdx is required"},
    {"HotKeysParamAndIndex",
     "hotKeys:\n  - {resource: a, threshold: 1, paramIdx: 0, param: {from: origin}}\n", 2, 43,
     "hotKeys[0].paramIdx", "param and paramIdx are mutually exclusive"},
    {"HotKeysQueryWithoutName", "hotKeys:\n  - {resource: a, threshold: 1, param: {from: query}}\n",
     2, 40, "hotKeys[0].param.name", "is required when from is header, query or path"},
    {"HotKeysUnknownSource",
     "hotKeys:\n  - {resource: a, threshold: 1, param: {from: cookie, name: id}}\n", 2, 47,
     "hotKeys[0].param.from", "unknown value \"cookie\"; expected header | query"},
    {"HotKeysUnknownKey", "hotKeys:\n  - {resource: a, threshold: 1, paramIdx: 0, count: 5}\n", 2,
     46, "hotKeys[0].count", "unknown key \"count\""},
    {"HotKeysSectionIsNotAList", "hotKeys: {resource: a}\n", 1, 10, "hotKeys",
     "must be a list of rules"},
    // A writer cut off after a key's name: yaml-cpp reads the bare word as a key with no value.
    {"SectionNameCutOffBeforeItsColon", "flow:\n  - resource: a\n    count: 1\ndegrade\n", 4, 1,
     "degrade", "\"degrade\" has no ':' after it (a half-written file?)"},
    // A writer cut off after a section's colon: `flow:` alone reads as a null, not as no rules.
    {"SectionWithNoValue", "flow:\n", 1, 1, "flow",
     "has no value (a half-written file?); write flow: [] for no rules"},
    {"LastSectionWithNoValue", "flow:\n  - {resource: a, count: 1}\ndegrade:\n", 3, 1, "degrade",
     "has no value (a half-written file?); write degrade: [] for no rules"},
    {"ClusterSectionWithNoValue", "cluster:\nflow: []\n", 1, 1, "cluster",
     "has no value (a half-written file?); leave it out for no Redis"},
    {"FieldNameCutOffBeforeItsColon", "flow:\n  - resource: a\n    count: 1\n    grade", 4, 5,
     "flow[0].grade", "\"grade\" has no ':' after it"},
    {"BareWordInAFlowMapping", "flow:\n  - {resource: a, count: 1, dryRun}\n", 2, 29,
     "flow[0].dryRun", "\"dryRun\" has no ':' after it"},
    // Names: two rules of one resource must not share a label in metrics and the admin API.
    {"DegradeNamesOfOneResourceCollide",
     "degrade:\n  - {name: dup, resource: a, count: 1, timeWindow: 1}\n  - {name: dup, resource: "
     "a, count: 2, timeWindow: 1}\n",
     3, 12, "degrade[1].name",
     "\"dup\" already labels degrade[0] of resource \"a\" in metrics and the admin API"},
    {"DegradeNameSpellsAnotherRulesPlace",
     "degrade:\n  - {name: \"degrade[1]\", resource: a, count: 1, timeWindow: 1}\n  - {resource: "
     "a, count: 2, timeWindow: 1}\n",
     2, 12, "degrade[0].name", "\"degrade[1]\" already labels degrade[1] of resource \"a\""},
    {"FlowNamesOfOneResourceCollide",
     "flow:\n  - {name: n, resource: a, count: 1}\n  - {name: n, resource: a, count: 2}\n", 3, 12,
     "flow[1].name", "\"n\" already labels flow[0]"},
    {"HotKeysNamesOfOneResourceCollide",
     "hotKeys:\n  - {name: n, resource: a, paramIdx: 0, threshold: 1}\n  - {name: n, resource: a, "
     "paramIdx: 1, threshold: 1}\n",
     3, 12, "hotKeys[1].name", "\"n\" already labels hotKeys[0]"},
    // paramFlow and hotKeys rules both export the hot-key families: their labels share them.
    {"HotKeysNameOfAParamFlowRulesResourceCollides",
     "paramFlow:\n  - {name: hot, resource: a, paramIdx: 0, count: 5}\nhotKeys:\n  - {name: hot, "
     "resource: a, paramIdx: 1, threshold: 1}\n",
     4, 12, "hotKeys[0].name", "\"hot\" already labels paramFlow[0] of resource \"a\""},
    {"HotKeysNameSpellsAParamFlowRulesPlace",
     "paramFlow:\n  - {resource: a, paramIdx: 0, count: 5}\nhotKeys:\n  - {name: \"paramFlow[0]\", "
     "resource: a, paramIdx: 1, threshold: 1}\n",
     4, 12, "hotKeys[0].name", "\"paramFlow[0]\" already labels paramFlow[0] of resource \"a\""},
};

class RuleFileRejects : public ::testing::TestWithParam<bad_input> {};

TEST_P(RuleFileRejects, ReportsTheLocationAndKeepsTheRulesInForce) {
  const bad_input& bad = GetParam();
  testing::temp_dir dir;
  const std::string good_text = "flow:\n  - {resource: keep, count: 7}\n";
  const std::string path = dir.write("rules.yaml", good_text);

  boost::asio::io_context io;
  engine eng;
  rule_file_watcher watcher(io.get_executor(), eng, path);
  ASSERT_TRUE(watcher.start().ok());
  const rule_set good = eng.rules();
  ASSERT_EQ(good.flow.size(), 1u);

  switch (bad.kind) {
    case file_kind::text:
      dir.write("rules.yaml", bad.text);
      break;
    case file_kind::directory:
      std::filesystem::remove(path);
      std::filesystem::create_directory(path);
      break;
    case file_kind::huge:
      std::filesystem::resize_file(path, 100u * 1024 * 1024);  // sparse: no disk used
      break;
    case file_kind::missing:
      std::filesystem::remove(path);
      break;
  }
  const parse_result result = watcher.reload_now();

  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.errors.size(), 1u) << result.error_text();
  const rule_file_error& e = result.errors[0];
  EXPECT_EQ(e.file, path);
  EXPECT_EQ(e.line, bad.line) << e.to_string();
  EXPECT_EQ(e.column, bad.column) << e.to_string();
  EXPECT_EQ(e.path, bad.path) << e.to_string();
  EXPECT_EQ(e.message.rfind(bad.message, 0), 0u) << e.to_string();

  EXPECT_EQ(eng.rules(), good);
  const reload_status status = watcher.status();
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.error, result.error_text());
  EXPECT_EQ(status.successes, 1u);
  EXPECT_EQ(status.failures, 1u);
}

INSTANTIATE_TEST_SUITE_P(EveryKindOfError, RuleFileRejects, ::testing::ValuesIn(bad_inputs),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(RuleFileRejects, OneNameOnRulesOfDifferentResourcesOrSectionsIsNoCollision) {
  const parse_result r = parse_rules(R"(flow: [{name: n, resource: a, count: 1}]
degrade:
  - {name: n, resource: a, count: 1, timeWindow: 1}
  - {name: n, resource: b, count: 1, timeWindow: 1}
)",
                                     "r.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
}

TEST(RuleFileRejects, AFileLargerThanTheCapAsTextToo) {
  const parse_result r = parse_rules(std::string(max_rule_file_bytes + 1, ' '), "big.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message.rfind("file is too large", 0), 0u);
}

TEST(RuleFileRejects, ARuleWithASchemaErrorStillReportsItsBadValues) {
  const parse_result r =
      parse_rules("flow:\n  - {resource: a, grade: fast, count: -1}\n", "rules.yaml");
  EXPECT_EQ(r.error_text(),
            "rules.yaml:2:26: flow[0].grade: unknown value \"fast\"; expected qps (1) | "
            "concurrency (0)\n"
            "rules.yaml:2:39: flow[0].count: must be >= 0\n");
}

// `strategy: relate` was read from the file: its missing refResource is the file's error too,
// whatever else the rule got wrong (every error is reported, SPEC §3).
TEST(RuleFileRejects, ARuleWithASchemaErrorStillReportsTheRefResourceItsStrategyNeeds) {
  const parse_result r = parse_rules(
      "flow:\n"
      "  - {resource: a, count: 1, bogus: 1, strategy: relate}\n"
      "  - {resource: b, count: 1, grade: 7, strategy: chain}\n"
      "  - {count: 1, strategy: relate}\n",
      "rules.yaml");
  EXPECT_EQ(r.error_text(),
            "rules.yaml:2:5: flow[0].refResource: is required when strategy is relate\n"
            "rules.yaml:2:29: flow[0].bogus: unknown key \"bogus\"\n"
            "rules.yaml:3:5: flow[1].refResource: is required when strategy is chain\n"
            "rules.yaml:3:36: flow[1].grade: unknown value \"7\"; expected qps (1) | "
            "concurrency (0)\n"
            "rules.yaml:4:5: flow[2].resource: is required\n"
            "rules.yaml:4:5: flow[2].refResource: is required when strategy is relate\n");
}

TEST(RuleFileRejects, ValuesLeftToDefaultsBehindASchemaErrorAreNotReported) {
  // `controlBehavior: lots` is unknown: the default (reject) stands in, so the zero queueing
  // time is not "missing for throttling", and nothing is said about the absent warm-up period.
  const parse_result r = parse_rules(
      "flow:\n  - {resource: a, count: 1, controlBehavior: lots, maxQueueingTimeMs: 0}\n",
      "rules.yaml");
  ASSERT_EQ(r.errors.size(), 1u) << r.error_text();
  EXPECT_EQ(r.errors[0].path, "flow[0].controlBehavior");
}

}  // namespace
}  // namespace floodgate::config

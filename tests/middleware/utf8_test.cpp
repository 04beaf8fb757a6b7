// Valid UTF-8 out of callers' bytes (RFC 3629): what the admin JSON and the metrics text rely on.
#include "utf8.hpp"

#include <floodgate/beast/blocked_response.hpp>

#include <gtest/gtest.h>

#include <string>

namespace floodgate::beast::detail {
namespace {

TEST(Utf8, WellFormedSequencesAreKeptWhole) {
  for (const std::string s : {"a", "\xc3\xa9", "\xe2\x82\xac", "\xef\xbf\xbd", "\xf0\x9f\x98\x80",
                              "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xee\x80\x80"}) {
    EXPECT_EQ(utf8_sequence_length(s, 0), s.size()) << s;
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Utf8, IllFormedBytesAreEachReplacedByUFFFD) {
  const std::string fffd = "\xef\xbf\xbd";
  const std::pair<std::string, std::string> cases[] = {
      {"\x80", fffd},                                   // a continuation byte alone
      {"\xc0\xaf", fffd + fffd},                        // overlong '/'
      {"\xc1\xbf", fffd + fffd},                        // overlong, C1
      {"\xe0\x80\xaf", fffd + fffd + fffd},             // overlong, three bytes
      {"\xf0\x80\x80\xaf", fffd + fffd + fffd + fffd},  // overlong, four bytes
      {"\xed\xa0\x80", fffd + fffd + fffd},             // a surrogate (U+D800)
      {"\xf4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"\xf5\x80\x80\x80", fffd + fffd + fffd + fffd},  // no such lead byte
      {"\xff", fffd},
      {"\xe2\x82", fffd + fffd},         // cut short at the end
      {"\xe2\x82z", fffd + fffd + "z"},  // cut short by ASCII
      {"a\xc3\xa9\xff"
       "b",
       "a\xc3\xa9" + fffd + "b"},
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(valid_utf8(in), out) << testing::PrintToString(in);
    std::string appended = "x";
    append_valid_utf8(appended, in);
    EXPECT_EQ(appended, "x" + out);
  }
}

TEST(Utf8, JsonEscapingKeepsTheJsonValidUtf8) {
  std::string out;
  append_json_escaped(out, "q\"\xff\n\xc3\xa9\x01");
  EXPECT_EQ(out, "q\\\"\xef\xbf\xbd\\n\xc3\xa9\\u0001");
}

}  // namespace
}  // namespace floodgate::beast::detail

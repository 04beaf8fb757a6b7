#include "support/metrics_text.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace floodgate::test {

namespace {

/// Parses `{a="x",b="y"}` starting at s[0] == '{'; returns the position after '}' or npos.
std::size_t parse_labels(std::string_view s, label_map& out) {
  std::size_t i = 1;
  while (i < s.size() && s[i] != '}') {
    const std::size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') {
      return std::string_view::npos;
    }
    const std::string key(s.substr(i, eq - i));
    std::string value;
    std::size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) {
        ++j;
        value += s[j] == 'n' ? '\n' : s[j];
      } else {
        value += s[j];
      }
    }
    out[key] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return i < s.size() ? i + 1 : std::string_view::npos;
}

}  // namespace

std::optional<double> sample(std::string_view text, std::string_view name,
                             const label_map& labels) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || !line.starts_with(name)) continue;
    std::string_view rest = line.substr(name.size());
    label_map found;
    if (!rest.empty() && rest.front() == '{') {
      const std::size_t end = parse_labels(rest, found);
      if (end == std::string_view::npos) continue;
      rest = rest.substr(end);
    }
    if (rest.empty() || rest.front() != ' ' || found != labels) continue;
    return std::strtod(std::string(rest.substr(1)).c_str(), nullptr);
  }
  return std::nullopt;
}

std::string metric_type(std::string_view text, std::string_view name) {
  const std::string prefix = "# TYPE " + std::string(name) + " ";
  const std::size_t at = text.find(prefix);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + prefix.size();
  return std::string(text.substr(start, text.find('\n', start) - start));
}

std::optional<promtool_result> promtool_check(const std::string& exposition) {
  const char* candidates[] = {"/usr/bin/promtool", "/usr/local/bin/promtool"};
  std::string promtool;
  for (const char* c : candidates) {
    if (::access(c, X_OK) == 0) promtool = c;
  }
  if (promtool.empty()) return std::nullopt;
  const auto file = std::filesystem::temp_directory_path() /
                    ("floodgate-metrics-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream f(file, std::ios::binary);
    f << exposition;
  }
  const std::string command = promtool + " check metrics < " + file.string() + " 2>&1";
  promtool_result r;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    r.ok = ::pclose(p) == 0;
  }
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return r;
}

}  // namespace floodgate::test

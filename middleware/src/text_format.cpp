#include "text_format.hpp"
#include "utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace floodgate::beast {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    // Whole numbers (counters) print as integers; the rest in shortest round-trip form.
    const bool whole = v == std::trunc(v) && std::fabs(v) < 9.0e15;
    const auto r = whole ? std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(v))
                         : std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

void append_unsigned(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_escaped(std::string& out, std::string_view s, bool quotes) {
  const bool plain = std::all_of(s.begin(), s.end(), [quotes](char c) {
    return static_cast<unsigned char>(c) < 0x80 && c != '\\' && c != '\n' && (c != '"' || !quotes);
  });
  if (plain) {
    out += s;  // the usual case: nothing to escape
    return;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else if (static_cast<unsigned char>(c) < 0x80) {
      out += c;
    } else if (const std::size_t n = detail::utf8_sequence_length(s, i); n == 0) {
      out += detail::replacement_character;  // the text format is UTF-8
    } else {
      out.append(s.substr(i, n));
      i += n - 1;
    }
  }
}

/// `name<suffix>{labels[,extra="value"]}` and the separating space.
void append_series(std::string& out, const MetricFamily& f, std::string_view suffix,
                   const ClientMetric& m, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
  out += f.name;
  out += suffix;
  if (!m.label.empty() || !extra_name.empty()) {
    out += '{';
    bool first = true;
    for (const auto& l : m.label) {
      if (!first) out += ',';
      first = false;
      out += l.name;
      out += "=\"";
      append_escaped(out, l.value, true);
      out += '"';
    }
    if (!extra_name.empty()) {
      if (!first) out += ',';
      out += extra_name;
      out += "=\"";
      out += extra_value;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void end_sample(std::string& out, const ClientMetric& m) {
  if (m.timestamp_ms != 0) {
    out += ' ';
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, m.timestamp_ms);
    out.append(buf, r.ptr);
  }
  out += '\n';
}

std::string_view type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Summary: return "summary";
    case MetricType::Histogram: return "histogram";
    case MetricType::Untyped: break;
  }
  return "untyped";
}

void write_histogram(std::string& out, const MetricFamily& f, const ClientMetric& m) {
  const auto& h = m.histogram;
  bool has_inf = false;
  std::string bound;
  for (const auto& b : h.bucket) {
    bound.clear();
    append_number(bound, b.upper_bound);
    has_inf = has_inf || std::isinf(b.upper_bound);
    append_series(out, f, "_bucket", m, "le", bound);
    append_unsigned(out, b.cumulative_count);
    end_sample(out, m);
  }
  if (!has_inf) {
    append_series(out, f, "_bucket", m, "le", "+Inf");
    append_unsigned(out, h.sample_count);
    end_sample(out, m);
  }
  append_series(out, f, "_sum", m);
  append_number(out, h.sample_sum);
  end_sample(out, m);
  append_series(out, f, "_count", m);
  append_unsigned(out, h.sample_count);
  end_sample(out, m);
}

void write_summary(std::string& out, const MetricFamily& f, const ClientMetric& m) {
  const auto& s = m.summary;
  std::string q;
  for (const auto& quantile : s.quantile) {
    q.clear();
    append_number(q, quantile.quantile);
    append_series(out, f, "", m, "quantile", q);
    append_number(out, quantile.value);
    end_sample(out, m);
  }
  append_series(out, f, "_sum", m);
  append_number(out, s.sample_sum);
  end_sample(out, m);
  append_series(out, f, "_count", m);
  append_unsigned(out, s.sample_count);
  end_sample(out, m);
}

}  // namespace

void write_text_format(const std::vector<MetricFamily>& families, std::string& out) {
  for (const auto& f : families) {
    if (!f.help.empty()) {
      out += "# HELP ";
      out += f.name;
      out += ' ';
      append_escaped(out, f.help, false);
      out += '\n';
    }
    out += "# TYPE ";
    out += f.name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    for (const auto& m : f.metric) {
      switch (f.type) {
        case MetricType::Histogram:
          write_histogram(out, f, m);
          break;
        case MetricType::Summary:
          write_summary(out, f, m);
          break;
        default:
          append_series(out, f, "", m);
          append_number(out, f.type == MetricType::Counter   ? m.counter.value
                             : f.type == MetricType::Gauge   ? m.gauge.value
                                                             : m.untyped.value);
          end_sample(out, m);
      }
    }
  }
}

}  // namespace floodgate::beast

// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/policy_selectors.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

namespace nvmeadapt::engine {
namespace {

using M = SelectorMatch;

constexpr SelectorField kFields[] = {
    {"controller", M::kGlob, &DeviceFacts::controller, "the kernel's or driver's name now (\"nvme*\"): renumbered at boot"},
    {"id", M::kExact, &DeviceFacts::id, "the controller's stable ID (nvme-adaptctl queues -o wide)"},
    {"model", M::kGlob, &DeviceFacts::model, "the model number (\"SAMSUNG MZWLO*\")"},
    {"serial", M::kExact, &DeviceFacts::serial, "the serial number"},
    {"firmware", M::kGlob, &DeviceFacts::firmware, "the firmware revision"},
    {"subsysnqn", M::kExact, &DeviceFacts::subsysnqn, "the NVM subsystem's NQN"},
    {"transport", M::kExact, &DeviceFacts::transport, "pcie, tcp, rdma, fc, loop, uvnvme"},
    {"layer", M::kExact, &DeviceFacts::layer, "local, host, target, backing (docs/fabrics.md)"},
    {"pci_address", M::kExact, &DeviceFacts::pci_address, "the PCI address (0000:3b:00.0)"},
    {"hostname", M::kGlob, &DeviceFacts::hostname, "the node's hostname (\"db-*\")"},
    {"kernel_release", M::kGlob, &DeviceFacts::kernel_release, "the node's kernel, uname -r (\"6.1.*\")"},
    {"node_labels", M::kLabels, &DeviceFacts::node_labels,
     "the node's labels from config node_labels_file, every one given (\"pool=fast,zone=eu-*\")"},
};

Error Invalid(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

bool IsGlobChar(char c) { return c == '*' || c == '?' || c == '['; }

// The part of a pattern every match starts with.
std::string_view LiteralPrefix(const SelectorField& field, std::string_view pattern) {
  if (field.match == M::kExact) return pattern;
  const size_t glob = std::find_if(pattern.begin(), pattern.end(), IsGlobChar) - pattern.begin();
  return pattern.substr(0, glob);
}

bool Literal(const SelectorField& field, std::string_view pattern) {
  return field.match == M::kExact || std::none_of(pattern.begin(), pattern.end(), IsGlobChar);
}

using LabelPair = std::pair<std::string_view, std::string_view>;  // key, value (or glob)

// "pool=fast,zone=eu-*" as its pairs; nullopt when a part is no key=value or a key comes twice. Label keys and
// values hold no ',' or '=' (Kubernetes': [a-z0-9A-Z] with '-', '_', '.', and '/' in a key's prefix).
std::optional<std::vector<LabelPair>> LabelPairs(std::string_view text, char separator = ',') {
  std::vector<LabelPair> pairs;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find(separator, start), text.size());
    const std::string_view part = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = part.find('=');
    if (eq == 0 || eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = part.substr(0, eq);
    if (std::any_of(pairs.begin(), pairs.end(), [&](const LabelPair& p) { return p.first == key; })) return std::nullopt;
    pairs.emplace_back(key, part.substr(eq + 1));
  }
  if (pairs.empty()) return std::nullopt;
  return pairs;
}

std::optional<std::string_view> LabelValue(std::string_view lines, std::string_view key) {
  auto pairs = LabelPairs(lines, '\n');
  if (!pairs) return std::nullopt;
  for (const LabelPair& pair : *pairs) {
    if (pair.first == key) return pair.second;
  }
  return std::nullopt;
}

bool LabelsMatch(std::string_view pattern, std::string_view lines) {
  const auto pairs = LabelPairs(pattern);
  if (!pairs) return false;
  return std::all_of(pairs->begin(), pairs->end(), [&](const LabelPair& pair) {
    const auto value = LabelValue(lines, pair.first);
    return value && GlobMatches(pair.second, *value);
  });
}

// False when no text matches both patterns: literals that differ, or literal prefixes that part.
bool PatternsMayMeet(const SelectorField& field, std::string_view x, std::string_view y) {
  if (Literal(field, x) && Literal(field, y)) return x == y;
  const std::string_view px = LiteralPrefix(field, x), py = LiteralPrefix(field, y);
  const size_t common = std::min(px.size(), py.size());
  return px.substr(0, common) == py.substr(0, common);
}

// Label sets meet unless a key both give has values that cannot meet (a key only one gives may be on a node).
bool LabelsMayMeet(std::string_view x, std::string_view y) {
  static constexpr SelectorField kValue{"", M::kGlob, nullptr, ""};
  const auto px = LabelPairs(x), py = LabelPairs(y);
  if (!px || !py) return true;
  for (const LabelPair& a : *px) {
    for (const LabelPair& b : *py) {
      if (a.first == b.first && !PatternsMayMeet(kValue, a.second, b.second)) return false;
    }
  }
  return true;
}

// A class "[abc]", "[a-z]", "[!0-9]" at pattern[at] == '['; `end` is set past its ']'. False when unclosed.
bool ClassMatches(std::string_view pattern, size_t at, char c, size_t& end, bool& matched) {
  size_t i = at + 1;
  const bool negated = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negated) ++i;
  matched = false;
  for (bool first = true; i < pattern.size() && (first || pattern[i] != ']'); first = false) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      matched |= pattern[i] <= c && c <= pattern[i + 2];
      i += 3;
    } else {
      matched |= pattern[i] == c;
      ++i;
    }
  }
  if (i >= pattern.size()) return false;
  end = i + 1;
  matched = matched != negated;
  return true;
}

// Sorted by first queue and walked together: a pair of long range lists costs their sort, not their product.
bool RangesMeet(std::vector<QueueRange> a, std::vector<QueueRange> b) {
  auto by_first = [](const QueueRange& x, const QueueRange& y) { return x.first < y.first; };
  std::sort(a.begin(), a.end(), by_first);
  std::sort(b.begin(), b.end(), by_first);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].first <= b[j].last && b[j].first <= a[i].last) return true;
    // The range that ends first meets nothing after the other one's start.
    if (a[i].last < b[j].last) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

}  // namespace

std::span<const SelectorField> SelectorFields() { return kFields; }

const SelectorField* FindSelectorField(std::string_view name) {
  for (const SelectorField& field : kFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

std::string SelectorFieldNames() {
  std::string names;
  for (const SelectorField& field : kFields) names += (names.empty() ? "" : ", ") + std::string(field.name);
  return names + ", " + std::string(kSelectorQueuesField);
}

Result<std::vector<QueueRange>> ParseQueueRanges(std::string_view text) {
  std::vector<QueueRange> ranges;
  if (text.empty()) return Invalid("empty: expected a queue id or a range (\"3\", \"1-4\", \"1,3,5-8\")");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    const size_t dash = part.find('-');
    auto number = [&](std::string_view digits, uint32_t& out) {
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
      return !digits.empty() && ec == std::errc() && ptr == digits.data() + digits.size();
    };
    QueueRange range;
    const bool parsed = dash == std::string_view::npos
                            ? number(part, range.first) && (range.last = range.first, true)
                            : number(part.substr(0, dash), range.first) && number(part.substr(dash + 1), range.last);
    if (!parsed) return Invalid("'" + std::string(part) + "' is not a queue id or a range such as 1-4");
    if (range.first == 0) return Invalid("'" + std::string(part) + "': queue 0 is the admin queue, never managed");
    if (range.first > range.last) return Invalid("'" + std::string(part) + "': the range ends before it starts");
    ranges.push_back(range);
    start = comma + 1;
  }
  return ranges;
}

std::string QueueRangesText(const std::vector<QueueRange>& ranges) {
  std::string text;
  for (const QueueRange& r : ranges) {
    text += (text.empty() ? "" : ",") + std::to_string(r.first);
    if (r.last != r.first) text += "-" + std::to_string(r.last);
  }
  return text;
}

bool GlobMatches(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, resume = 0;  // the last '*' and where its match would grow from
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
      continue;
    }
    if (p < pattern.size()) {
      size_t end = p + 1;
      bool matched = pattern[p] == '?' || pattern[p] == text[t];
      if (pattern[p] == '[' && !ClassMatches(pattern, p, text[t], end, matched)) matched = pattern[p] == text[t];
      if (matched) {
        p = end;
        ++t;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    t = ++resume;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Status CheckSelectorPattern(const SelectorField& field, std::string_view pattern) {
  if (pattern.size() > kMaxSelectorValueLength) {
    return Invalid("longer than " + std::to_string(kMaxSelectorValueLength) + " characters");
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    const auto c = static_cast<unsigned char>(pattern[i]);
    if (c < 0x20 || c == 0x7f) return Invalid("character " + std::to_string(i) + " is a control character");
  }
  if (field.match == M::kLabels && !LabelPairs(pattern)) {
    return Invalid("'" + std::string(pattern) + "' is not key=value pairs with each key once (\"pool=fast,zone=eu-*\")");
  }
  if (field.match != M::kExact) {
    for (size_t i = pattern.find('['); i != std::string_view::npos; i = pattern.find('[', i + 1)) {
      size_t end = 0;
      bool matched = false;
      if (!ClassMatches(pattern, i, 'x', end, matched)) {
        return Invalid("the class opened at character " + std::to_string(i) + " is not closed with ']'");
      }
    }
  }
  return OkStatus();
}

bool Matches(const Selector& selector, const DeviceFacts& facts, uint32_t qid) {
  for (const Selector::Criterion& c : selector.criteria) {
    const std::string& fact = facts.*(c.field->fact);
    if (fact.empty()) return false;  // unknown is no match: a selector never reaches a device it cannot tell
    switch (c.field->match) {
      case M::kExact:
        if (c.pattern != fact) return false;
        break;
      case M::kGlob:
        if (!GlobMatches(c.pattern, fact)) return false;
        break;
      case M::kLabels:
        if (!LabelsMatch(c.pattern, fact)) return false;
        break;
    }
  }
  if (selector.queues.empty()) return true;
  return std::any_of(selector.queues.begin(), selector.queues.end(),
                     [&](const QueueRange& r) { return r.first <= qid && qid <= r.last; });
}

bool MayOverlap(const Selector& a, const Selector& b) {
  for (const Selector::Criterion& x : a.criteria) {
    for (const Selector::Criterion& y : b.criteria) {
      if (x.field != y.field) continue;
      const bool meet = x.field->match == M::kLabels ? LabelsMayMeet(x.pattern, y.pattern)
                                                     : PatternsMayMeet(*x.field, x.pattern, y.pattern);
      if (!meet) return false;
    }
  }
  if (a.QueueScoped() && b.QueueScoped() && !RangesMeet(a.queues, b.queues)) return false;
  return true;
}

}  // namespace nvmeadapt::engine

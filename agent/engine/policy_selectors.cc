#include "agent/engine/policy_selectors.h"

#include <algorithm>
#include <charconv>

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
  if (field.match == M::kGlob) {
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
    if (c.field->match == M::kGlob ? !GlobMatches(c.pattern, fact) : c.pattern != fact) return false;
  }
  if (selector.queues.empty()) return true;
  return std::any_of(selector.queues.begin(), selector.queues.end(),
                     [&](const QueueRange& r) { return r.first <= qid && qid <= r.last; });
}

bool MayOverlap(const Selector& a, const Selector& b) {
  for (const Selector::Criterion& x : a.criteria) {
    for (const Selector::Criterion& y : b.criteria) {
      if (x.field != y.field) continue;
      if (Literal(*x.field, x.pattern) && Literal(*y.field, y.pattern)) {
        if (x.pattern != y.pattern) return false;
        continue;
      }
      const std::string_view px = LiteralPrefix(*x.field, x.pattern), py = LiteralPrefix(*y.field, y.pattern);
      const size_t common = std::min(px.size(), py.size());
      if (px.substr(0, common) != py.substr(0, common)) return false;
    }
  }
  if (a.QueueScoped() && b.QueueScoped() && !RangesMeet(a.queues, b.queues)) return false;
  return true;
}

}  // namespace nvmeadapt::engine

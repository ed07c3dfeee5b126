#pragma once
// Byte ranges of a text that came from outside: in a rendered chat prompt, the bytes a request supplied
// (message content, tool arguments, names) as opposed to the template's own markup. The Jinja renderer
// tracks them and the tokenizer reads no control token inside them, so text a client writes cannot become
// turn markers.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace saker::text {

struct ByteRange {
  size_t begin = 0;
  size_t end = 0;  // exclusive
  bool operator==(const ByteRange&) const = default;
};

// Kept sorted, disjoint, non-empty and never touching (touching ranges are merged), so "which bytes"
// has exactly one representation.
using ByteRanges = std::vector<ByteRange>;

// A text and the ranges of it that came from outside.
struct MarkedText {
  std::string text;
  ByteRanges untrusted;
};

// Appends [begin, end), which must not start before the last range ends; merges with it when they touch.
inline void append_range(ByteRanges& ranges, size_t begin, size_t end) {
  if (begin >= end) return;
  if (!ranges.empty() && ranges.back().end >= begin) {
    ranges.back().end = std::max(ranges.back().end, end);
    return;
  }
  ranges.push_back({begin, end});
}

// Appends every range of src moved `offset` bytes on (src describes text appended at that offset).
inline void append_shifted(ByteRanges& dst, std::span<const ByteRange> src, size_t offset) {
  for (const ByteRange& r : src) append_range(dst, r.begin + offset, r.end + offset);
}

// The part of `ranges` inside [begin, end), moved so that `begin` becomes 0 (the ranges of a substring).
inline ByteRanges slice_ranges(std::span<const ByteRange> ranges, size_t begin, size_t end) {
  ByteRanges out;
  for (const ByteRange& r : ranges) {
    if (r.end <= begin) continue;
    if (r.begin >= end) break;
    append_range(out, std::max(r.begin, begin) - begin, std::min(r.end, end) - begin);
  }
  return out;
}

// Whether [begin, end) shares at least one byte with a range.
inline bool overlaps(std::span<const ByteRange> ranges, size_t begin, size_t end) {
  if (begin >= end) return false;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                             [](size_t pos, const ByteRange& r) { return pos < r.end; });
  return it != ranges.end() && it->begin < end;
}

// Whether `ranges` keeps the representation above and lies within a text of `size` bytes.
inline bool well_formed(std::span<const ByteRange> ranges, size_t size) {
  size_t last_end = 0;
  for (size_t k = 0; k < ranges.size(); ++k) {
    const ByteRange& r = ranges[k];
    if (r.begin >= r.end || r.end > size || (k > 0 && r.begin <= last_end)) return false;
    last_end = r.end;
  }
  return true;
}

// Any list of ranges brought to the representation above, clipped to a text of `size` bytes.
inline ByteRanges normalized(std::span<const ByteRange> ranges, size_t size) {
  ByteRanges sorted(ranges.begin(), ranges.end());
  std::sort(sorted.begin(), sorted.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  ByteRanges out;
  for (const ByteRange& r : sorted) {
    const size_t end = std::min(r.end, size);
    if (r.begin >= end) continue;
    if (!out.empty() && out.back().end >= r.begin) out.back().end = std::max(out.back().end, end);
    else out.push_back({r.begin, end});
  }
  return out;
}

}  // namespace saker::text

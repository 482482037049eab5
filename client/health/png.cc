#include "client/health/png.h"

#include <zlib.h>

#include "absl/strings/string_view.h"

namespace gloowatch::client {
namespace {

void AppendBigEndian(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

// length, type, data, CRC-32 of type and data (PNG spec, 5.3).
void AppendChunk(std::string& out, absl::string_view type, absl::string_view data) {
  AppendBigEndian(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.append(type.data(), type.size());
  out.append(data.data(), data.size());
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(out.data() + start),
                          out.size() - start);
  AppendBigEndian(out, static_cast<uint32_t>(crc));
}

}  // namespace

std::string EncodePalettePng(uint32_t width, uint32_t height, const std::vector<Rgb>& palette,
                             const std::vector<uint8_t>& pixels) {
  std::string header;
  AppendBigEndian(header, width);
  AppendBigEndian(header, height);
  header += std::string("\x08\x03\x00\x00\x00", 5);  // 8 bits, palette, deflate, no interlace
  std::string colours;
  for (const Rgb& c : palette) colours.append(reinterpret_cast<const char*>(c.data()), 3);
  // Each row behind its filter byte, 0 (none): the rows are runs of a few
  // colours, which deflate takes as they are.
  std::string raw;
  raw.reserve(static_cast<size_t>(height) * (width + 1));
  for (uint32_t y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(pixels.data()) + static_cast<size_t>(y) * width,
               width);
  }
  uLongf size = compressBound(raw.size());
  std::string deflated(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                reinterpret_cast<const Bytef*>(raw.data()), raw.size(),
                Z_DEFAULT_COMPRESSION) != Z_OK) {
    return "";
  }
  deflated.resize(size);
  std::string png("\x89PNG\r\n\x1a\n", 8);
  AppendChunk(png, "IHDR", header);
  AppendChunk(png, "PLTE", colours);
  AppendChunk(png, "IDAT", deflated);
  AppendChunk(png, "IEND", "");
  return png;
}

}  // namespace gloowatch::client

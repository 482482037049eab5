// A palette PNG (8 bits per pixel, zlib through the system's zlib): how the
// heatmap page draws a large matrix, one pixel per pair.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gloowatch::client {

using Rgb = std::array<uint8_t, 3>;

// `pixels` holds width * height palette indices, row by row; every index is
// below palette.size() (at most 256). Returns the PNG file's bytes, or ""
// when zlib fails (out of memory).
std::string EncodePalettePng(uint32_t width, uint32_t height, const std::vector<Rgb>& palette,
                             const std::vector<uint8_t>& pixels);

}  // namespace gloowatch::client

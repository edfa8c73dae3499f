// Byte sizes as users write them: "1048576", "4KiB", "256MiB", "1GB" (SI: 10^3 steps),
// "1GiB" (binary: 2^10 steps), and ranges "1KiB:8GiB" that double from the first size
// to the last, as nccl-tests' -b/-e/-f 2 do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wallsim {

// Throws InputError (source "command line", path `option`) on a malformed or zero size.
std::uint64_t parse_byte_size(const std::string& text, const std::string& option);

// A single size gives one element; "A:B" gives A, 2A, 4A, ... up to and including B.
std::vector<std::uint64_t> parse_byte_sizes(const std::string& text, const std::string& option);

// "256 MiB", "1.5 GiB", "512 B": binary units, for human-readable tables.
std::string format_bytes(double bytes);

}  // namespace wallsim

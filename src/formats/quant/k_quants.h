#pragma once
// Pieces shared by the K-quant codecs (Q4_K, Q5_K, Q6_K): the packed 6-bit scale/min table and the
// per-sub-block scale searches. Not a public interface.
#include <cstdint>

namespace saker::quant {

inline constexpr int kSuperBlock = 256;  // elements per K-quant block

// The 12-byte scale table of Q4_K / Q5_K holds eight 6-bit scales and eight 6-bit mins:
//   j < 4:  sc = s[j] & 63,                          m = s[j + 4] & 63
//   j >= 4: sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4,  m = (s[j + 4] >> 4) | (s[j] >> 6) << 4
inline void unpack_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
// Scale and min of the two sub-blocks (2c and 2c + 1) of 64-element chunk c of a Q4_K / Q5_K block, whose
// first 16 bytes are f16 d, f16 dmin and the 12-byte table: element code q decodes to d1 * q - m1 in the
// first sub-block and d2 * q - m2 in the second.
struct ChunkScales {
  float d1, m1, d2, m2;
};
ChunkScales chunk_scales(const uint8_t* block, int c);

// The inverse: eight scales and mins in 0..63 -> 12 bytes.
void pack_scales_mins(const int* sc, const int* m, uint8_t* s);

// Fits x[i] ~ scale * L[i] - offset with codes L in [0, nmax] (offset >= 0: the minimum is clamped to at most
// zero), minimising the error weighted by w. Starts from the min/max mapping, then tries nstep + 1 code
// assignments from the grid of inverse scales (nmax + rmin + rdelta * k) / range, refitting scale and
// offset by weighted least squares for each and keeping the best. Returns scale.
float fit_affine_codes(const float* x, const float* w, int n, int nmax, float rmin, float rdelta, int nstep,
                       uint8_t* L, float* offset);

// The shared first half of the Q4_K / Q5_K quantisers for one 256-element super-block: per sub-block affine
// fits (weights rms + |x|), the eight scales and mins to 6 bits against two f16 super-scales written to
// dst[0..4) with the packed table at dst[4..16), then every code L[256] in [0, nmax] recomputed against the
// scales as they will decode. The caller packs L into its own bit layout.
void quantize_k_affine_superblock(const float* src, int nmax, float rmin, float rdelta, int nstep, uint8_t* dst,
                                  uint8_t* L);

// Fits x[i] ~ scale * (L[i] - nmax) with signed codes in [-nmax, nmax - 1], weighting by x^2, trying inverse
// scales around -nmax / max (max: the signed value of largest magnitude). Returns scale (0 for an all-zero
// group, with every L = nmax).
float fit_symmetric_codes(const float* x, int n, int nmax, uint8_t* L);

}  // namespace saker::quant

// GHASH (NIST SP 800-38D, the hash of GCM) over GF(2^128), for the Di-PS payload MAC:
// runtime/ps/mac.py keys it once per payload, as it keys Poly1305, and uses it where the
// CPU multiplies four blocks in one VPCLMULQDQ (AVX-512): 20 GB/s on one core of this
// project's machines against OpenSSL's Poly1305 at 12.6, and both ends of a push MAC
// every byte of it (docs/dips-runtime.md, Security).
//
// Python module stagec.csrc._mac: support() -> 0 | 1 | 2, and Ghash(key) with
// update(address, size), which releases the GIL, and digest().
#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <memory>
#include <stdexcept>

namespace {

#define BASE __attribute__((target("pclmul,ssse3,sse4.1")))
#define WIDE __attribute__((target("pclmul,ssse3,sse4.1,avx2,avx512f,avx512bw,vpclmulqdq")))

constexpr int kWideBlocks = 32;  // blocks per iteration of the wide loop (8 x 4 lanes)

struct Product {  // an unreduced carry-less product: lo + mid * x^64 + hi * x^128
  __m128i lo, mid, hi;
};

BASE inline __m128i reverse_bytes(__m128i x) {
  return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

BASE inline void multiply_add(Product& p, __m128i a, __m128i b) {
  p.lo = _mm_xor_si128(p.lo, _mm_clmulepi64_si128(a, b, 0x00));
  p.hi = _mm_xor_si128(p.hi, _mm_clmulepi64_si128(a, b, 0x11));
  p.mid = _mm_xor_si128(p.mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10), _mm_clmulepi64_si128(a, b, 0x01)));
}

// The product reduced modulo x^128 + x^7 + x^2 + x + 1, in the byte-reversed
// representation of Gueron and Kounavis (Intel, "Carry-Less Multiplication and Its
// Usage for Computing the GCM Mode", 2014, Fig. 5): a one-bit shift, then two folds.
BASE inline __m128i reduce(const Product& p) {
  __m128i lo = _mm_xor_si128(p.lo, _mm_slli_si128(p.mid, 8));
  __m128i hi = _mm_xor_si128(p.hi, _mm_srli_si128(p.mid, 8));
  __m128i carry_lo = _mm_srli_epi32(lo, 31), carry_hi = _mm_srli_epi32(hi, 31);
  lo = _mm_slli_epi32(lo, 1);
  hi = _mm_slli_epi32(hi, 1);
  __m128i across = _mm_srli_si128(carry_lo, 12);
  carry_hi = _mm_slli_si128(carry_hi, 4);
  carry_lo = _mm_slli_si128(carry_lo, 4);
  lo = _mm_or_si128(lo, carry_lo);
  hi = _mm_or_si128(_mm_or_si128(hi, carry_hi), across);
  __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(lo, 31), _mm_slli_epi32(lo, 30)), _mm_slli_epi32(lo, 25));
  __m128i b = _mm_srli_si128(a, 4);
  lo = _mm_xor_si128(lo, _mm_slli_si128(a, 12));
  __m128i c = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)), _mm_srli_epi32(lo, 7));
  c = _mm_xor_si128(c, b);
  return _mm_xor_si128(hi, _mm_xor_si128(lo, c));
}

BASE inline __m128i multiply(__m128i a, __m128i b) {
  Product p{_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
  multiply_add(p, a, b);
  return reduce(p);
}

struct GhashState {
  alignas(64) __m128i powers[kWideBlocks];  // powers[i] = H^(kWideBlocks - i): block i of a run of 32
  __m128i y;                                // the hash so far, byte-reversed
  unsigned char partial[16];                // bytes of a block not yet complete
  size_t partial_bytes;
  bool wide;
};

BASE void blocks_one_by_one(GhashState* g, const unsigned char* p, size_t blocks) {
  const __m128i h = g->powers[kWideBlocks - 1];
  __m128i y = g->y;
  for (size_t i = 0; i < blocks; ++i)
    y = multiply(_mm_xor_si128(y, reverse_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)))), h);
  g->y = y;
}

WIDE inline __m128i fold(__m512i v) {  // the sum of a register's four 128-bit lanes
  __m256i half = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

// Horner's rule 32 blocks at a time: Y' = (Y + X_0) H^32 + X_1 H^31 + ... + X_31 H, the
// 32 products carry-less and unreduced, summed lane by lane, and reduced once, since
// the shift and the reduction are linear. Blocks left over go one by one.
WIDE size_t blocks_wide(GhashState* g, const unsigned char* p, size_t blocks) {
  const __m512i mask = _mm512_broadcast_i32x4(
      _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m128i y = g->y;
  size_t done = 0;
  for (; done + kWideBlocks <= blocks; done += kWideBlocks) {
    const unsigned char* q = p + 16 * done;
    __m512i lo = _mm512_setzero_si512(), mid = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    for (int k = 0; k < kWideBlocks / 4; ++k) {
      __m512i x = _mm512_shuffle_epi8(_mm512_loadu_si512(q + 64 * k), mask);
      if (k == 0) x = _mm512_xor_si512(x, _mm512_zextsi128_si512(y));
      __m512i h = _mm512_load_si512(&g->powers[4 * k]);
      lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(x, h, 0x00));
      hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(x, h, 0x11));
      mid = _mm512_xor_si512(mid, _mm512_xor_si512(_mm512_clmulepi64_epi128(x, h, 0x10),
                                                   _mm512_clmulepi64_epi128(x, h, 0x01)));
    }
    y = reduce(Product{fold(lo), fold(mid), fold(hi)});
  }
  g->y = y;
  return done;
}

BASE void blocks(GhashState* g, const unsigned char* p, size_t count) {
  size_t done = g->wide ? blocks_wide(g, p, count) : 0;
  blocks_one_by_one(g, p + 16 * done, count - done);
}

// 0: this CPU lacks PCLMULQDQ; 1: it has it (one block at a time, slower than
// OpenSSL's Poly1305); 2: it also has AVX-512's VPCLMULQDQ for the wide loop.
int support() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("ssse3") || !__builtin_cpu_supports("sse4.1"))
    return 0;
  return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("avx512bw")
             ? 2
             : 1;
}

BASE void init(GhashState* g, const unsigned char key[16]) {
  std::memset(static_cast<void*>(g), 0, sizeof(GhashState));
  __m128i h = reverse_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(key)));
  __m128i power = h;
  for (int i = kWideBlocks - 1; i >= 0; --i) {
    g->powers[i] = power;
    power = multiply(power, h);
  }
  g->wide = support() == 2;
}

BASE void update(GhashState* g, const unsigned char* p, size_t n) {
  if (g->partial_bytes) {
    size_t take = n < 16 - g->partial_bytes ? n : 16 - g->partial_bytes;
    std::memcpy(g->partial + g->partial_bytes, p, take);
    g->partial_bytes += take;
    p += take;
    n -= take;
    if (g->partial_bytes < 16) return;
    blocks(g, g->partial, 1);
    g->partial_bytes = 0;
  }
  blocks(g, p, n / 16);
  std::memcpy(g->partial, p + 16 * (n / 16), n % 16);
  g->partial_bytes = n % 16;
}

// GHASH of everything given, the last partial block padded with zeros.
BASE void finish(GhashState* g, unsigned char out[16]) {
  if (g->partial_bytes) {
    std::memset(g->partial + g->partial_bytes, 0, 16 - g->partial_bytes);
    blocks(g, g->partial, 1);
    g->partial_bytes = 0;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), reverse_bytes(g->y));
}

}  // namespace

namespace nb = nanobind;

class Ghash {
 public:
  explicit Ghash(nb::bytes key) : state_(new GhashState) {
    if (key.size() != 16) throw nb::value_error("a GHASH key is 16 bytes");
    if (support() == 0) throw std::runtime_error("this CPU has no PCLMULQDQ: GHASH cannot run here");
    init(state_.get(), reinterpret_cast<const unsigned char*>(key.c_str()));
  }
  // The caller keeps the `size` bytes at `address` alive and unchanged during the call.
  void absorb(std::uintptr_t address, std::size_t size) {
    update(state_.get(), reinterpret_cast<const unsigned char*>(address), size);
  }
  nb::bytes digest() {
    unsigned char out[16];
    finish(state_.get(), out);
    return nb::bytes(reinterpret_cast<const char*>(out), 16);
  }

 private:
  std::unique_ptr<GhashState> state_;  // 64-byte aligned: C++17's aligned new
};

NB_MODULE(_mac, m) {
  m.def("support", &support);
  nb::class_<Ghash>(m, "Ghash")
      .def(nb::init<nb::bytes>())
      .def("update", &Ghash::absorb, nb::call_guard<nb::gil_scoped_release>())
      .def("digest", &Ghash::digest);
}

/* The 128-bit peak of this CPU's FP pipes, measured as bench/kernels.py's yardsticks: 12
   independent chains of 128-bit multiply-adds, with nothing else in the loop (no loads, no
   broadcasts), one function per kind of multiply-add the wasm kernels compile to:
   - fma128: vfmadd (the relaxed variant's f32x4.relaxed_madd);
   - muladd128: vmulps then vaddps (the simd128 variant: WebAssembly SIMD has no fused
     multiply-add), whose two ops share the FP pipes.
   Each runs `iters` rounds of 12 chains x 4 lanes x 2 flops and returns a sum so that the
   work is kept. Built with -ffp-contract=off: the compiler must not fuse muladd128's pairs. */
#include <immintrin.h>

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECLARE(i) __m128 c##i = _mm_set1_ps((float)(i));
#define SUM(i) s = _mm_add_ps(s, c##i);
/* the empty asm makes x opaque to the compiler, so each product is computed anew */
#define FMA(i) __asm__("" : "+x"(x)); c##i = _mm_fmadd_ps(x, y, c##i);
#define MULADD(i) __asm__("" : "+x"(x)); c##i = _mm_add_ps(c##i, _mm_mul_ps(x, y));

__attribute__((target("avx,fma"))) float fma128(long iters) {
    __m128 x = _mm_set1_ps(1.0f), y = _mm_set1_ps(1e-9f), s = _mm_setzero_ps();
    CHAINS(DECLARE)
    for (long t = 0; t < iters; t++) {
        CHAINS(FMA)
    }
    CHAINS(SUM)
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx"))) float muladd128(long iters) {
    __m128 x = _mm_set1_ps(1.0f), y = _mm_set1_ps(1e-9f), s = _mm_setzero_ps();
    CHAINS(DECLARE)
    for (long t = 0; t < iters; t++) {
        CHAINS(MULADD)
    }
    CHAINS(SUM)
    return _mm_cvtss_f32(s);
}

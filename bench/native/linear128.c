/* The f32_linear kernel's algorithm in native 128-bit code: 2 x 4 tiles of dot products
   over the packed W (wasm_kernels/pack.py), W blocked by 128 KiB, k % 4 left scalar.
   Compiled with FMA, its inner loop is what a code generator with vfmadd231ps and free
   instruction scheduling makes of the same design: the ceiling of that design at the
   width of WebAssembly SIMD (bench/kernels.py compares the wasm kernel with it). */
#include <immintrin.h>
#include <stddef.h>

static inline float hsum(__m128 v) {
    __m128 s = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

void linear128(const float *a, const float *w, float *c, int m, int k, int n) {
    int kv = k & ~3, nb = (131072 / (4 * k | 1)) & ~3;
    if (nb < 4) nb = 4;
    for (int jb = 0; jb < n; jb += nb) {
        int jend = jb + nb < n ? jb + nb : n;
        for (int i = 0; i < m; i += 2) {
            int rows = i + 1 < m ? 2 : 1;
            int j = jb;
            for (; j + 4 <= jend && j + 4 <= n - n % 4; j += 4) {
                const float *p = w + (size_t)j * k, *a0 = a + (size_t)i * k;
                const float *a1 = a0 + (rows == 2 ? k : 0);
                __m128 c00 = _mm_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
                __m128 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
                for (int kk = 0; kk < kv; kk += 4, p += 16) {
                    __m128 x0 = _mm_loadu_ps(a0 + kk), x1 = _mm_loadu_ps(a1 + kk);
                    __m128 y0 = _mm_loadu_ps(p), y1 = _mm_loadu_ps(p + 4);
                    __m128 y2 = _mm_loadu_ps(p + 8), y3 = _mm_loadu_ps(p + 12);
                    c00 = _mm_fmadd_ps(x0, y0, c00); c01 = _mm_fmadd_ps(x0, y1, c01);
                    c02 = _mm_fmadd_ps(x0, y2, c02); c03 = _mm_fmadd_ps(x0, y3, c03);
                    c10 = _mm_fmadd_ps(x1, y0, c10); c11 = _mm_fmadd_ps(x1, y1, c11);
                    c12 = _mm_fmadd_ps(x1, y2, c12); c13 = _mm_fmadd_ps(x1, y3, c13);
                }
                __m128 acc[2][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}};
                for (int r = 0; r < rows; r++)
                    for (int v = 0; v < 4; v++) {
                        float s = hsum(acc[r][v]);
                        const float *ar = a0 + (r ? k : 0);
                        for (int kk = kv; kk < k; kk++) s += ar[kk] * p[(kk - kv) * 4 + v];
                        c[(size_t)(i + r) * n + j + v] = s;
                    }
            }
            for (; j < jend; j++)
                for (int r = 0; r < rows; r++) {
                    const float *ar = a + (size_t)(i + r) * k, *wr = w + (size_t)j * k;
                    float s = 0;
                    for (int kk = 0; kk < k; kk++) s += ar[kk] * wr[kk];
                    c[(size_t)(i + r) * n + j] = s;
                }
        }
    }
}

// tensor/kernels_declarations.hpp — the kernels that exist twice, each declared
// once: tensor/kernels.hpp includes this list inside `namespace scalar` (the
// plain loops, the specification) and, in a SIMD build, again in
// `namespace kernels` (the xsimd versions the library calls). It has no
// include guard on purpose and is not meant to be included anywhere else.
//
// Each declaration carries its shapes and its formula; real, Unary, Binary,
// Layout and AdamStep are those of tensor/kernels.hpp.

// out, x: (n).  out = f(x)
void unary_forward(Unary op, real* out, const real* x, int64_t n);
// dx, dy, x, y: (n), y = f(x).  dx = dy · f'(x), written (not accumulated)
void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n);
// out, x: (n).  out = x^p
void pow_forward(real* out, const real* x, real p, int64_t n);
// dx = dy · p · x^(p−1)
void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n);
// out: (n); a, b: (n) when their step is 1, one value when it is 0.  out = a ∘ b
void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n);
// out: (rows, n); row r of a at a + r·a_row_step, of b at b + r·b_row_step, each n
// contiguous values (a row step of 0 repeats one row for every r: a row of
// weights broadcast over the queries).  out[r] = a[r] ∘ b[r], one call for all rows
void binary_rows_forward(Binary op, real* out, const real* a, int64_t a_row_step, const real* b,
                         int64_t b_row_step, int64_t rows, int64_t n);
// out, x: (n), x ≤ 0.  out = eˣ, the exp of the softmax kernels (whose arguments are
// x − max ≤ 0). In float within 1 ulp of std::exp, with results below the smallest
// normal number (x < −87.34) flushed to 0 (tensor/kernels_simd.hpp says how); in double
// xsimd::exp.
void exp_nonpositive(real* out, const real* x, int64_t n);
// out, x: (n).  out += x — every gradient accumulation goes through this
void accumulate(real* out, const real* x, int64_t n);
// out: (outer, inner); x: (outer, n, inner).  out = Σ over the middle axis
void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner);
// out: (cols); a, b: (rows, cols).  out[j] = Σ_r a[r][j] · b[r][j] — the sum over
// the rows of a ⊙ b without forming it: a broadcast factor's gradient in mul's
// backward, Σ over the broadcast rows of dy ⊙ (the other factor). cols = 1 is
// one dot product of length rows.
void column_dots(real* out, const real* a, const real* b, int64_t rows, int64_t cols);
// out, argmax: (outer, inner); x: (outer, n, inner).  max over the middle axis; argmax is
// the first index that attains it
void max_axis_forward(real* out, int64_t* argmax, const real* x, int64_t outer, int64_t n,
                      int64_t inner);
// out, x: (rows, cols).  out = exp(x − max) / Σ exp(x − max), row by row
void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols);
// dx, y, dy: (rows, cols).  dx = y ⊙ (dy − Σ dy ⊙ y)
void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols);
// out, x: (rows, cols).  out = x − max − log Σ exp(x − max)
void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols);
// dx, y, dy: (rows, cols), y = log_softmax(x).  dx = dy − exp(y) · Σ dy
void log_softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols);
// out: (B,Tq,dv); weights, scores: (B,Tq,Tk); scale: S factors, S = 0 (none; scale
// may be null), 1 (one for every score) or Tk (one per key, the same for every row);
// values: (B,Tk,dv).  Attention pooling (tensor/kernels_attention.cpp):
//   z = scores ⊙ scale,  weights = softmax(z) row by row,  out[b] = weights[b] @ values[b]
// Tk = 0 pools nothing: out = 0.
void attention_pool_forward(real* out, real* weights, const real* scores, const real* scale,
                            int64_t scale_count, const real* values, int64_t B, int64_t Tq,
                            int64_t Tk, int64_t dv);
// dscores: (B,Tq,Tk); dscale: (S); dvalues: (B,Tk,dv) — each null when not wanted,
// written (not accumulated); the inputs as in the forward, out its result:
//   dα = dout @ valuesᵀ,  dz = α ⊙ (dα − Σ_k α_k dα_k), the sum formed as dout · out
//   dscores = dz ⊙ scale,  dscale = Σ over the rows of dz ⊙ scores (and over the keys
//   when S = 1),  dvalues[b] = weights[b]ᵀ @ dout[b]
void attention_pool_backward(real* dscores, real* dscale, real* dvalues, const real* dout,
                             const real* weights, const real* scores, const real* scale,
                             int64_t scale_count, const real* values, const real* out, int64_t B,
                             int64_t Tq, int64_t Tk, int64_t dv);
// y, q, k, v: (N,L,d); lse: (N,L).  Causal attention of N = B·H heads
// (tensor/kernels_causal_attention.cpp), query i seeing keys 0 … i:
//   s_ij = (scale·q_i) · k_j,  y_i = Σ_{j≤i} softmax_j(s_i)_j v_j,  lse_i = log Σ_{j≤i} e^(s_ij)
// by the online softmax over tiles of 32 keys: no (L,L) array, only y and lse.
void causal_attention_forward(real* y, real* lse, const real* q, const real* k, const real* v,
                              real scale, int64_t N, int64_t L, int64_t d);
// dq, dk, dv: (N,L,d), written (not accumulated); dy, y: (N,L,d), lse: (N,L) from the
// forward; q, k, v, scale as there. With P_ij = e^(s_ij − lse_i) recomputed tile by tile:
//   D_i = dy_i · y_i,  dS_ij = P_ij (dy_i · v_j − D_i)
//   dq_i = scale Σ_j dS_ij k_j,  dk_j = Σ_i dS_ij (scale·q_i),  dv_j = Σ_i P_ij dy_i
void causal_attention_backward(real* dq, real* dk, real* dv, const real* dy, const real* q,
                               const real* k, const real* v, const real* y, const real* lse,
                               real scale, int64_t N, int64_t L, int64_t d);
// c: (M,N); a: (M,K) stored per a_layout; b: (K,N) stored per b_layout.  c = a @ b
void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N);
// c: (B,M,N) contiguous; a: B matrices (M,K), the i-th at a + i·a_step, each stored per
// a_layout; b likewise (K,N) at b + i·b_step (a step of 0 reuses one matrix).
// c[i] = a[i] @ b[i], each summed exactly as matmul_forward sums it. One call for the
// whole batch: many tiny products (attention's (1,K) @ (K,1)) cost one dispatch, not B.
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K, int64_t N);
// c: (M,N); a: (K,M), read as aᵀ; b: (K,N).  c += α · aᵀ @ b: each entry of the
// product summed exactly as matmul_forward(aᵀ, b) sums it, then added into c in
// one rounding: c += α·(aᵀb) without ever writing aᵀb itself.
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N);
// mask: (n).  mask[i] = 0 where draw(seed, i) < drop_below, else keep: a
// dropout mask from one seed, element i's draw a 32-bit hash of (seed, i)
// (scalar::mask_draw; tensor/kernels_random.cpp), the same on every machine
// and thread count. drop_below = p·2^32 drops each element with probability p.
void dropout_mask(real* mask, int64_t n, uint32_t drop_below, real keep, uint64_t seed);
// p, m, v, g: (n).  One Adam step (AdamStep above): p, m and v updated in place from g
// (tensor/kernels_optim.cpp).
void adam_step(real* p, real* m, real* v, const real* g, int64_t n, const AdamStep& step);
// x: (n).  Σ x², summed in double (a gradient norm's total of millions of squares).
double sum_of_squares(const real* x, int64_t n);
// x: (N,D) -> y (N,D), x̂ (N,D), rstd (N); weight, bias: (D) or null for none.
//   μ = mean of a row, r = 1/√(σ² + eps), x̂ = (x − μ)·r, y = x̂·w + b
// (μ and σ² summed in double; tensor/kernels_norm.cpp)
void layer_norm_forward(real* y, real* x_hat, real* rstd, const real* x, const real* weight,
                        const real* bias, int64_t N, int64_t D, real eps);
// dy, x̂: (N,D), rstd: (N), weight: (D) or null -> dx (N,D), dweight, dbias (D), each
// skipped when null and overwritten, not accumulated:
//   dx = r (dx̂ − mean dx̂ − x̂ · mean(dx̂ ⊙ x̂)) with dx̂ = dy ⊙ w;  dw = Σ_rows dy ⊙ x̂;  db = Σ_rows dy
void layer_norm_backward(real* dx, real* dweight, real* dbias, const real* dy, const real* x_hat,
                         const real* rstd, const real* weight, int64_t N, int64_t D);

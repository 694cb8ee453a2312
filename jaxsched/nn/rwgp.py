"""The Random Walk Gaussian Process (RWGP) placement head of the Dual-Agent Scheduler (Xing et al., KDD'23,
§4.2), as the project's design note `RWGP.md` specifies it (the steps below; "RWGP.md step n" and
"§n" in this package refer to that note, kept beside the papers, not shipped). One observation at a time;
batch with `jax.vmap`.

Pipeline (N job slots, M machines, embedding size e, history length τ):
  1. machine embeddings `Sᶜ = relu(Oᶜ W₂ + b₂)` (shared by current and history observations);
  2. job i's machine graph `P⁽ⁱ⁾_kl = Matern52(‖Ŝʲ_i‖·‖Sᶜ_k − Sᶜ_l‖ / ρ)` — the distance between the
     Kronecker features `Ŝʲ_i ⊗ Sᶜ_k` without building them (`job_machine_graphs`);
  3. the normalised random-walk graph kernel `k_RW(G, G′) = 1ᵀ exp(β P ⊗ P′) 1 / √(k(G,G) k(G′,G′))`;
  4. a GP over the τ·N (graph, sampled affinity row) pairs of a ring buffer of past decisions
     (`RWGPHistory`), one factorisation per decision shared by all current jobs: with the series kernel's
     finite feature map the L × L system of `gp_predict_features` (Woodbury) when L < τ·N, else the
     τ·N × τ·N one (`masked_cholesky`, `gp_predict`);
  5. the action `Aᶜ_i ~ N(μ_i, v_i I_M)` (`placement_distribution`; for PPO, `jaxsched.nn.das`'s
     `masked_normal_log_prob` / `masked_normal_entropy` with the per-job std `sqrt(v_i)`).

Kernel form. Two evaluations of `1ᵀ exp(β P ⊗ P′) 1` are implemented:
  * spectral (exact): `P = U diag(λ) Uᵀ`, `s_a = (1ᵀu_a)²`, `k = Σ_a Σ_b s_a s′_b exp(β λ_a λ′_b)` — one
    eigh per graph, then M² exponentials per PAIR of graphs;
  * series (moments): `k = Σ_ℓ β^ℓ/ℓ! φ_ℓ(G) φ_ℓ(G′)`, `φ_ℓ = 1ᵀP^ℓ1`, truncated at L terms. This is a
    finite feature map: `k(G, G′) = ψ(G)·ψ(G′)` with `ψ_ℓ = √(β^ℓ/ℓ!) φ_ℓ`, so a Gram matrix is one
    `[A, L] × [L, B]` matmul after ⌈L/2⌉ matrix–vector products per graph; the normalised kernel is the
    cosine similarity of the ψ's (PSD by construction, k(G, G) = 1).
  Timings (this 2-core CPU, jax 0.9.2, `jit(vmap)` over 64 envs, τ = 8, N = 16, β·M² = 4, L = 32, median
  of 5 runs after compilation; "Gram" = the normalised Gram of the (τ+1)·N = 144 graphs per env, "head" =
  the whole `RWGPHead` forward / its gradient, e = 64):
                 Gram: series  spectral     head fwd: series  spectral     head grad: series  spectral
      M = 8:          3.3 ms     86 ms                 20 ms    118 ms                 94 ms    445 ms
      M = 32:          43 ms    1.11 s                 81 ms    1.10 s                569 ms    7.2 s
  The series form is the default (`kernel="series"`): 25–35× faster for the Gram, its error against
  `jax.scipy.linalg.expm` is below 1e-5 relative over the whole allowed β range (tests; ~5e-7 seen), and its
  gradients are always finite, whereas eigh's gradient is NaN/inf for repeated eigenvalues — which Matérn
  graphs have whenever machines look alike (e.g. P = 11ᵀ has M − 1 zero eigenvalues). The spectral form is a
  cross-check (`kernel="spectral"`, forward use only).

β bound. Matérn values are in [0, 1] and P is PSD with trace M, so 0 ≤ λ_a ≤ M and `β λ_a λ′_b ≤ β M²`.
We parametrise `β = beta_max · sigmoid(raw)` with `beta_max · M² ≤ BETA_M2_MAX = 8` by default
(`beta_max = 8 / M²`); at the bound two graphs whose leading eigenvalues are 1 and M (P = I vs 11ᵀ) get a
normalised kernel exp(−β(M−1)²/2) ≈ e⁻⁴, a useful range. Anything up to `BETA_M2_SAFE = 64` is accepted
(float32 `exp` overflows at 88). L is the smallest with a truncation error below 1e-6 at the bound: 32 for 8.

Choices RWGP.md leaves open:
  * the training targets are the sampled affinity rows minus the prior mean; there is no output scale
    (the normalised kernel has k(G, G) = 1), so the prior variance is 1 and σ² = softplus + 1e-3;
  * padded current job slots return μ = 0, v = 1; the posterior variance is floored at `var_floor`;
  * distrax has no masked distribution: `placement_distribution` makes padded rows N(0, 1) (finite
    samples), and PPO uses `nn.das.masked_normal_log_prob`/`masked_normal_entropy`, which drop them.
"""

from __future__ import annotations

import functools
import math

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.scipy.linalg import cho_solve, expm, solve_triangular

BETA_M2_MAX = 8.0  # default bound on β·M² (= β·λ_max·λ′_max)
BETA_M2_SAFE = 64.0  # hard limit: M²·exp(β M²) must stay finite in float32 (exp overflows at ~88.7)
SERIES_TOL = 1e-6  # truncation error of the series kernel at the β bound, relative
NOISE_FLOOR = 1e-3  # σ² ≥ this: keeps K + σ²I well conditioned in float32 when history steps repeat
KERNELS = ("series", "spectral")
PRIOR_MEANS = ("learned", "zero")


# ---------------------------------------------------------------------------------------------- graphs


def matern52(r):
    """Matérn ν = 5/2 correlation of a scaled distance `r ≥ 0` (any shape): `(1 + √5r + 5r²/3) e^{−√5r}`.

    Its derivative, `−(5/3) r (1 + √5r) e^{−√5r}`, is 0 at r = 0, so the gradient is safe there as long as
    `r` itself has a finite gradient (see `_safe_sqrt`)."""
    s5r = math.sqrt(5.0) * r
    return (1.0 + s5r + s5r * s5r / 3.0) * jnp.exp(-s5r)


def _safe_sqrt(x):
    """`√x` for `x ≥ 0` with gradient 0 (not inf/NaN) at x = 0 (the double-`where` trick). For tiny x > 0
    the chain with `matern52` stays finite: `matern52′(r)/(2r) → −5/6` as r → 0."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def job_machine_graphs(job_emb, mach_emb, rho):
    """`(job_emb f32[N, e], mach_emb f32[M, e′], rho > 0) -> P f32[N, M, M]`, job i's machine graph.

    `P⁽ⁱ⁾_kl = Matern52(‖Ŝʲ_i ⊗ Sᶜ_k − Ŝʲ_i ⊗ Sᶜ_l‖ / ρ)` with `‖a ⊗ b − a ⊗ c‖² = ‖a‖²·‖b − c‖²`, so the
    e·e′-dimensional Kronecker features are never built. Symmetric, unit diagonal, entries in [0, 1], PSD."""
    # Squared machine distances by the ‖b‖² + ‖c‖² − 2b·c expansion (a matmul: 40× faster on the CPU than
    # reducing an [M, M, e′] difference tensor), clamped at 0 with an exact-zero diagonal. Its rounding error
    # (~1e-7‖b‖²) only matters at tiny distances, where Matern52 is flat (1 − O(r²)).
    sq = jnp.sum(jnp.square(mach_emb), axis=-1)
    d_mach = jnp.maximum(sq[:, None] + sq[None, :] - 2.0 * mach_emb @ mach_emb.T, 0.0)
    d_mach = jnp.where(jnp.eye(mach_emb.shape[0], dtype=bool), 0.0, d_mach)  # [M, M]
    job_sq = jnp.sum(jnp.square(job_emb), axis=-1)  # [N]
    d2 = job_sq[:, None, None] * d_mach[None, :, :] / jnp.square(rho)  # [N, M, M]
    return matern52(_safe_sqrt(d2))


# ------------------------------------------------------------------------------ random-walk graph kernel


def series_terms_for(beta_m2: float, tol: float = SERIES_TOL) -> int:
    """Smallest L with `Σ_{ℓ≥L} x^ℓ/ℓ! < tol` for `x = β·M²`: the series kernel truncated at L terms then
    has relative error < tol for every graph pair (proof at `rw_moments`). 20 for x = 4, 32 for 8."""
    x = float(beta_m2)
    terms = [
        math.exp(ell * math.log(x) - math.lgamma(ell + 1)) if x > 0 else float(ell == 0)
        for ell in range(int(4 * x) + 60)
    ]
    for n_terms in range(len(terms)):
        if sum(terms[n_terms:]) < tol:
            return max(n_terms, 1)
    raise ValueError(f"β·M² = {x} too large for the series kernel")


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def rw_moments(P, n_terms: int):
    """`P f32[..., M, M] -> q f32[..., L]`, `q_ℓ = 1ᵀ(P/M)^ℓ 1` for ℓ = 0..L−1 (⌈L/2⌉ matrix–vector products).

    With `x = β M²`, `β^ℓ/ℓ! φ_ℓ φ′_ℓ = x^ℓ/ℓ! q_ℓ q′_ℓ`; scaling P by 1/M keeps q in [0, M] (no overflow).

    Truncation bound: P has entries ≥ 0 (and is PSD), so every term `β^ℓ/ℓ! φ_ℓ φ′_ℓ` is ≥ 0, and
    `φ_ℓ = 1ᵀP^ℓ1 ≤ ‖1‖² λ_max^ℓ ≤ M·M^ℓ`, hence term ℓ ≤ `(β M²)^ℓ/ℓ! · M²`. The ℓ = 0 term alone is
    `φ_0 φ′_0 = M²`, so `k ≥ M²` and the dropped tail is at most `Σ_{ℓ≥L} x^ℓ/ℓ!` relative to k — below
    `SERIES_TOL` for L = `series_terms_for(x_max)` and every β ≤ β_max (the tail grows with x). The
    normalised kernel `k/√(k k′)` then has relative error ≤ tol/(1 − tol).

    The gradient is written by hand (`_rw_moments_bwd`): `∂/∂P` of all L moments is one batched
    `[M, K] × [K, M]` product of the K vectors and their cotangents, where autodiff's K outer products
    were recomputed in every fusion that consumed them."""
    return _rw_moments_fwd(P, n_terms)[0]


def _rw_moments_fwd(P, n_terms: int):
    """`(q f32[..., L], (Pm, V f32[..., K + 1, M]))`, `V` the vectors `v_j = (P/M)^j 1`, j = 0..K."""
    m = P.shape[-1]
    Pm = P / m

    # P is symmetric, so with v_j = (P/M)^j 1: q_2j = v_j·v_j and q_2j+1 = v_j·v_j+1 — two moments per
    # matrix–vector product (the products dominate the cost: P is re-read from memory each time).
    def step(v, _):
        w = jnp.sum(Pm * v[..., None, :], axis=-1)  # a fused multiply-reduce: batched M × M dots are slow
        return w, (v, jnp.sum(v * v, axis=-1), jnp.sum(v * w, axis=-1))

    v0 = jnp.ones(P.shape[:-1], P.dtype)
    # Unrolled: the products are tiny, and a rolled scan's per-iteration overhead costs more than they do.
    last, (vs, even, odd) = jax.lax.scan(step, v0, None, length=(n_terms + 1) // 2, unroll=True)
    q = jnp.stack([even, odd], axis=1).reshape(-1, *even.shape[1:])[:n_terms]  # q_0, q_1, q_2, ...
    vs = jnp.moveaxis(jnp.concatenate([vs, last[None]]), 0, -2)  # [..., K + 1, M]
    return jnp.moveaxis(q, 0, -1), (Pm, vs)


def _rw_moments_bwd(n_terms: int, res, dq):
    """Reverse mode of `rw_moments`: with `g_j` the cotangent of `v_j` (from the moments that read it and
    from `v_j+1 = (P/M) v_j`), `∂L/∂(P/M) = Σ_j g_j+1 v_jᵀ` and `g_j = direct_j + (P/M)ᵀ g_j+1`."""
    Pm, vs = res
    k = vs.shape[-2] - 1
    dq = jnp.pad(dq, [(0, 0)] * (dq.ndim - 1) + [(0, 2 * k - n_terms)])
    d_even, d_odd = dq[..., 0::2], dq[..., 1::2]  # [..., K] each: q_2j = v_j·v_j, q_2j+1 = v_j·v_j+1
    zero = jnp.zeros_like(d_even[..., :1])
    # direct_j = 2 d_even_j v_j + d_odd_j v_j+1 + d_odd_j−1 v_j−1 (for j = 0..K; terms out of range are 0)
    later = jnp.concatenate([vs[..., 1:, :], vs[..., :1, :]], -2)  # v_j+1 (the last row unused)
    earlier = jnp.concatenate([vs[..., :1, :], vs[..., :-1, :]], -2)  # v_j−1 (the first row unused)
    a = jnp.concatenate([2.0 * d_even, zero], axis=-1)[..., None] * vs
    b = jnp.concatenate([d_odd, zero], axis=-1)[..., None] * later
    c = jnp.concatenate([zero, d_odd], axis=-1)[..., None] * earlier
    direct = a + b + c  # [..., K + 1, M]
    g = direct[..., k, :]
    carried = [g]  # g_K, g_K−1, ..., g_1
    for j in range(k - 1, 0, -1):
        g = direct[..., j, :] + jnp.sum(Pm * g[..., :, None], axis=-2)  # (P/M)ᵀ g
        carried.append(g)
    gs = jnp.stack(carried[::-1], axis=-2)  # [..., K, M]: g_1 .. g_K
    d_pm = jnp.sum(gs[..., :, :, None] * vs[..., :k, None, :], axis=-3)
    return (d_pm / Pm.shape[-1],)


rw_moments.defvjp(_rw_moments_fwd, _rw_moments_bwd)


def rw_series_coeffs(beta, m: int, n_terms: int):
    """`√(x^ℓ/ℓ!)` for ℓ = 0..L−1, `x = β M²`, computed in log space (`β > 0`) → f32[L]."""
    ell = jnp.arange(n_terms, dtype=jnp.float32)
    log_x = jnp.log(beta) + 2.0 * math.log(m)
    return jnp.exp(0.5 * (ell * log_x - jax.scipy.special.gammaln(ell + 1.0)))


def rw_series_features(P, beta, n_terms: int, normalize: bool = True):
    """`P f32[..., M, M] -> ψ f32[..., L]`: `k_RW(G, G′) ≈ ψ(G)·ψ(G′)` (truncated series). With
    `normalize` ψ has unit norm, so `ψ̂·ψ̂′` is the normalised kernel (‖ψ‖ ≥ ψ_0 = M > 0: safe)."""
    psi = rw_moments(P, n_terms) * rw_series_coeffs(beta, P.shape[-1], n_terms)
    if normalize:
        psi = psi / jnp.linalg.norm(psi, axis=-1, keepdims=True)
    return psi


def rw_spectral_factors(P):
    """`P f32[..., M, M] -> (lam f32[..., M], s f32[..., M])`: eigenvalues and `s_a = (1ᵀu_a)²`."""
    lam, u = jnp.linalg.eigh(P)
    return lam, jnp.square(jnp.sum(u, axis=-2))


def _spectral_pair(lam_a, s_a, lam_b, s_b, beta):
    """`Σ_a Σ_b s_a s′_b exp(β λ_a λ′_b)` for one pair of graphs' factors (`f32[M]` each) → scalar."""
    return jnp.einsum("a,ab,b->", s_a, jnp.exp(beta * lam_a[:, None] * lam_b[None, :]), s_b)


def rw_kernel_spectral(P, P2, beta):
    """Unnormalised `1ᵀ exp(β P ⊗ P′) 1` of two graphs `f32[M, M]`, spectrally (O(M³) + O(M²))."""
    return _spectral_pair(*rw_spectral_factors(P), *rw_spectral_factors(P2), beta)


def rw_kernel_series(P, P2, beta, n_terms: int):
    """Unnormalised `Σ_{ℓ<L} β^ℓ/ℓ! φ_ℓ(G) φ_ℓ(G′)` of two graphs `f32[M, M]` (same M)."""
    return jnp.dot(rw_series_features(P, beta, n_terms, False), rw_series_features(P2, beta, n_terms, False))


def rw_kernel_expm(P, P2, beta):
    """Reference `1ᵀ expm(β P ⊗ P′) 1` with the M²×M² product matrix (small M only: tests)."""
    return jnp.sum(expm(beta * jnp.kron(P, P2)))


def rw_gram(Pa, Pb, beta, kernel: str = "series", n_terms: int | None = None):
    """Normalised random-walk Gram `(Pa f32[A, M, M], Pb f32[B, M, M]) -> f32[A, B]`,
    `k(G, G′)/√(k(G, G) k(G′, G′))`. `n_terms` (series only) defaults to `series_terms_for(β M²)`, which
    needs a concrete β: pass it explicitly under `jit`."""
    if kernel == "series":
        if n_terms is None:
            n_terms = series_terms_for(float(beta) * Pa.shape[-1] ** 2)
        return rw_series_features(Pa, beta, n_terms) @ rw_series_features(Pb, beta, n_terms).T
    if kernel == "spectral":
        lam_a, s_a = rw_spectral_factors(Pa)
        lam_b, s_b = rw_spectral_factors(Pb)
        diag = jax.vmap(_spectral_pair, (0, 0, 0, 0, None))
        norm_a = jnp.sqrt(diag(lam_a, s_a, lam_a, s_a, beta))
        norm_b = jnp.sqrt(diag(lam_b, s_b, lam_b, s_b, beta))
        # One row of the Gram at a time: the [A, B, M, M] exponentials would not fit for M = 32 under vmap.
        rows = jax.lax.map(
            lambda a: jax.vmap(_spectral_pair, (None, None, 0, 0, None))(a[0], a[1], lam_b, s_b, beta),
            (lam_a, s_a),
        )
        return rows / norm_a[:, None] / norm_b[None, :]
    raise ValueError(f"unknown kernel '{kernel}'; choose one of {', '.join(KERNELS)}")


# -------------------------------------------------------------------------------------------- posterior


def masked_cholesky(K, mask, noise, jitter: float = 1e-5):
    """Lower Cholesky factor of `K + (σ² + jitter) I` over the valid training points `K f32[T, T]`,
    `mask bool[T]`. Masked points get zero rows/columns and a unit diagonal: K becomes block-diagonal, so
    they are decoupled from the valid ones (and the factor exists even when every point is masked)."""
    both = mask[:, None] & mask[None, :]
    diag = jnp.where(mask, noise + jitter, 1.0)
    return jnp.linalg.cholesky(jnp.where(both, K, 0.0) + jnp.diag(diag))


def gp_predict(chol, k_star, k_ss, resid, prior_star, mask, var_floor: float = 1e-6):
    """Posterior mean and variance of B query points from a `masked_cholesky` factor `chol f32[T, T]`.

    `k_star f32[B, T]`, `k_ss f32[B]`, `resid f32[T, M]` = y − m(X), `prior_star f32[B, M]`, `mask bool[T]`
    → `(mu f32[B, M], var f32[B])`: `μ = m* + k*ᵀ(K + σ²I)⁻¹ resid`, `v = max(k** − k*ᵀ(K + σ²I)⁻¹k*, floor)`.
    Masked training points are zeroed in k* and the residuals, so they cannot influence the result."""
    k_star = jnp.where(mask[None, :], k_star, 0.0)
    resid = jnp.where(mask[:, None], resid, 0.0)
    alpha = cho_solve((chol, True), resid)  # [T, M]
    mu = prior_star + k_star @ alpha
    w = solve_triangular(chol, k_star.T, lower=True)  # [T, B]
    var = jnp.maximum(k_ss - jnp.sum(jnp.square(w), axis=0), var_floor)
    return mu, var


def gp_training_stats(psi_train, resid, mask):
    """`(psi_train f32[..., T, L], resid f32[..., T, M], mask bool[..., T]) -> (gram f32[..., L, L],
    cross f32[..., L, M])`: `ΨᵀΨ` and `Ψᵀr` over the valid training points — all that the L × L posterior
    (`gp_predict_stats`) needs of them. Both are sums over the points, so the stats of a history are the
    sum of its slots' stats: a training batch computes each observation's once and sums τ per decision."""
    psi_train = jnp.where(mask[..., None], psi_train, 0.0)
    resid = jnp.where(mask[..., None], resid, 0.0)
    gram = jnp.einsum("...tl,...tk->...lk", psi_train, psi_train)
    return gram, jnp.einsum("...tl,...tm->...lm", psi_train, resid)


def gp_predict_stats(gram, cross, psi_star, prior_star, noise, jitter: float = 1e-5, var_floor: float = 1e-6):
    """The posterior of `gp_predict_features` from the training points' `gp_training_stats`:
    `gram f32[L, L]`, `cross f32[L, M]`, `psi_star f32[B, L]`, `prior_star f32[B, M]`, `noise` = σ² →
    `(mu f32[B, M], var f32[B])`, through the Cholesky factor R of `C = sI + ΨᵀΨ` (s = σ² + jitter)."""
    n_feat, m = cross.shape
    s = noise + jitter
    chol = jnp.linalg.cholesky(gram + s * jnp.eye(n_feat, dtype=gram.dtype))
    # C⁻¹ = R⁻ᵀR⁻¹ (R = chol): one triangular solve for both, ψ*ᵀC⁻¹Ψᵀr = (R⁻¹ψ*)ᵀ(R⁻¹Ψᵀr).
    w = solve_triangular(chol, jnp.concatenate([cross, psi_star.T], axis=1), lower=True)
    w_resid, w_star = w[:, :m], w[:, m:]  # [L, M], [L, B]
    mu = prior_star + w_star.T @ w_resid
    var = jnp.maximum(s * jnp.sum(jnp.square(w_star), axis=0), var_floor)
    return mu, var


def gp_predict_features(
    psi_train, psi_star, resid, prior_star, mask, noise, jitter: float = 1e-5, var_floor: float = 1e-6
):
    """The posterior of `gp_predict` for a kernel with a finite feature map, `K = Ψ Ψᵀ`, `k* = Ψ* Ψᵀ` and
    `k** = ‖ψ*‖²` (the series kernel), through an L × L system instead of the T × T one (Woodbury).

    `psi_train f32[T, L]`, `psi_star f32[B, L]`, `resid f32[T, M]`, `prior_star f32[B, M]`, `mask bool[T]`,
    `noise` = σ² → `(mu f32[B, M], var f32[B])`. With `s = σ² + jitter`, `C = sI + ΨᵀΨ` (masked rows of Ψ
    zeroed, which decouples them exactly as `masked_cholesky` does):
        k*ᵀ(K + sI)⁻¹ r = Ψ* C⁻¹ Ψᵀ r,      k** − k*ᵀ(K + sI)⁻¹ k* = s ψ*ᵀ C⁻¹ ψ*,
    both from `(K + sI)⁻¹ = (I − Ψ C⁻¹ Ψᵀ) / s`. O(T L² + L³) rather than O(T³): for τ·N = 128 points and
    L = 32 terms a 32 × 32 Cholesky replaces a 128 × 128 one, in the forward pass and in every gradient.
    The variance has no cancellation (the T × T form subtracts two numbers near 1)."""
    gram, cross = gp_training_stats(psi_train, resid, mask)
    return gp_predict_stats(gram, cross, psi_star, prior_star, noise, jitter, var_floor)


def gp_posterior(K, k_star, k_ss, y, prior_train, prior_star, mask, noise, jitter=1e-5, var_floor=1e-6):
    """GP regression of one query (Eq. 13–14 with a prior mean): `K f32[T, T]`, `k_star f32[T]`, `k_ss`
    scalar, `y, prior_train f32[T, M]`, `prior_star f32[M]`, `mask bool[T]`, `noise` = σ² → `(mu f32[M],
    var f32[])`. All points masked gives `(prior_star, k_ss)`."""
    chol = masked_cholesky(K, mask, noise, jitter)
    mu, var = gp_predict(
        chol, k_star[None], jnp.reshape(k_ss, (1,)), y - prior_train, prior_star[None], mask, var_floor
    )
    return mu[0], var[0]


# ------------------------------------------------------------------------------------------------ history


@struct.dataclass
class RWGPHistory:
    """Ring buffer of the last τ placement decisions of one env (vmap it for a batch).

    It stores OBSERVATIONS, not embeddings: the agent recomputes the history's job embeddings and graphs
    with the current parameters (in the PPO update too), so gradients flow through the history (RWGP.md
    step 5). Slot `head` is written next (the oldest once full); slot order does not matter to the GP.
    """

    job_obs: jnp.ndarray  # f32[τ, N, u]
    job_mask: jnp.ndarray  # bool[τ, N]
    mach_obs: jnp.ndarray  # f32[τ, M, v]
    affinity: jnp.ndarray  # f32[τ, N, M] the sampled affinities (the GP targets)
    valid: jnp.ndarray  # bool[τ] slot holds a decision
    head: jnp.ndarray  # i32 next slot to write
    # Which call wrote each slot (`calls` then), and the env's calls so far: a training batch finds every
    # slot's observation among the rollout's own (`history_rows`), to encode each one once.
    step: jnp.ndarray  # i32[τ]
    calls: jnp.ndarray  # i32 (not reset by `clear`)

    @classmethod
    def empty(cls, tau: int, n_jobs: int, n_machines: int, job_features: int, machine_features: int):
        return cls(
            job_obs=jnp.zeros((tau, n_jobs, job_features), jnp.float32),
            job_mask=jnp.zeros((tau, n_jobs), bool),
            mach_obs=jnp.zeros((tau, n_machines, machine_features), jnp.float32),
            affinity=jnp.zeros((tau, n_jobs, n_machines), jnp.float32),
            valid=jnp.zeros((tau,), bool),
            head=jnp.zeros((), jnp.int32),
            step=jnp.zeros((tau,), jnp.int32),
            calls=jnp.zeros((), jnp.int32),
        )

    @property
    def tau(self) -> int:
        return self.valid.shape[-1]

    def push(self, job_obs, job_mask, mach_obs, affinity) -> RWGPHistory:
        """Write one decision (`f32[N, u]`, `bool[N]`, `f32[M, v]`, `f32[N, M]`) over the oldest slot."""
        h = self.head
        return self.replace(
            job_obs=self.job_obs.at[h].set(job_obs),
            job_mask=self.job_mask.at[h].set(job_mask),
            mach_obs=self.mach_obs.at[h].set(mach_obs),
            affinity=self.affinity.at[h].set(affinity),
            valid=self.valid.at[h].set(True),
            head=(h + 1) % self.tau,
            step=self.step.at[h].set(self.calls),
        )

    def count_call(self) -> RWGPHistory:
        """After every call of the env (a decision or not): the call counter `calls` + 1."""
        return self.replace(calls=self.calls + 1)

    def clear(self) -> RWGPHistory:
        """Forget every decision (episode reset); shapes unchanged."""
        return self.replace(valid=jnp.zeros_like(self.valid), head=jnp.zeros_like(self.head))

    def chronological(self) -> RWGPHistory:
        """The same buffer rolled so index 0 is the oldest slot and τ−1 the newest (for inspection)."""
        roll = lambda x: jnp.roll(x, -self.head, axis=0)
        return self.replace(
            job_obs=roll(self.job_obs),
            job_mask=roll(self.job_mask),
            mach_obs=roll(self.mach_obs),
            affinity=roll(self.affinity),
            valid=roll(self.valid),
            head=jnp.zeros_like(self.head),
            step=roll(self.step),
        )


def history_rows(history: RWGPHistory, start: RWGPHistory) -> jax.Array:
    """`i32[T, τ]`: where each history slot of T consecutive calls' histories (`history` `[T]`, the carry
    each call saw) lies in the table `[start's τ slots; the T calls' observations]`, `start` being the
    carry before the first of them. A slot written at call c ≥ start.calls is row τ + c − start.calls;
    an older one is in `start` (the ring buffer only drops its oldest). Invalid slots get row 0."""
    tau = start.tau
    c = history.step  # [T, τ]
    in_start = (c[..., None] == start.step) & start.valid  # [T, τ, τ]
    row = jnp.where(c >= start.calls, tau + c - start.calls, jnp.argmax(in_start, axis=-1))
    return jnp.where(history.valid, row, 0)


@struct.dataclass
class RWGPStats:
    """The GP training stats (`gp_training_stats`) of each slot of a history: what a decision's posterior
    needs of its history once the slots' observations are encoded. A rollout keeps them beside the
    `RWGPHistory` (same slots, same validity), computed with the acting parameters, so that a call encodes
    only its own observation (`agents.das.DASAgent.act_cached`)."""

    gram: jnp.ndarray  # f32[τ, L, L] ΨᵀΨ of the slot's jobs
    cross: jnp.ndarray  # f32[τ, L, M] Ψᵀ(affinity − prior) of the slot's jobs

    def write(self, slot, gram, cross) -> RWGPStats:
        """The stats of one new decision (`f32[L, L]`, `f32[L, M]`) in `slot`."""
        return RWGPStats(self.gram.at[slot].set(gram), self.cross.at[slot].set(cross))

    def total(self, valid) -> tuple[jax.Array, jax.Array]:
        """`(gram f32[L, L], cross f32[L, M])` summed over the `valid bool[τ]` slots."""
        w = valid.astype(self.gram.dtype)
        return jnp.einsum("s,slk->lk", w, self.gram), jnp.einsum("s,slm->lm", w, self.cross)


def decision_stats(psi, prior, job_mask, affinity):
    """The training points one decision adds to a history, as GP stats: `psi f32[..., N, L]`, `prior
    f32[..., N, M]`, `job_mask bool[..., N]`, `affinity f32[..., N, M]` (the sampled rows) → `(gram
    f32[..., L, L], cross f32[..., L, M])` (`_training_targets` for one slot)."""
    return gp_training_stats(psi, affinity - prior, job_mask)


# --------------------------------------------------------------------------------------------------- head


def _inv_softplus(y: float) -> float:
    return float(np.log(np.expm1(y)))


class PairMLP(nn.Module):
    """`(job_emb f32[..., N, e], mach_emb f32[..., M, e′]) -> f32[..., N, M]`: a one-hidden-layer relu
    MLP on every pair `[Ŝʲ_i, Sᶜ_k]` (the learned prior mean). The first layer is split,
    `W[a; b] = W_a a + W_b b`, so it costs (N + M)·e·h instead of N·M·(e + e′)·h — the concatenated form
    dominated the head's run time."""

    hidden: int = 64

    @nn.compact
    def __call__(self, job_emb, mach_emb):
        init = nn.initializers.orthogonal(np.sqrt(2))
        h_job = nn.Dense(self.hidden, kernel_init=init, name="job")(job_emb)  # [..., N, h]
        h_mach = nn.Dense(self.hidden, kernel_init=init, use_bias=False, name="machine")(mach_emb)
        h = nn.relu(h_job[..., :, None, :] + h_mach[..., None, :, :])  # [..., N, M, h]
        # Small last layer (gain 0.01, as the policy heads in mlp.py): the prior starts near 0.
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(0.01), name="out")(h)[..., 0]


class RWGPHead(nn.Module):
    """`(job_emb f32[N, e], mach_obs f32[M, v], job_mask bool[N], hist_job_emb f32[τ, N, e],
    hist_mach_obs f32[τ, M, v], hist_job_mask bool[τ, N], hist_affinity f32[τ, N, M], hist_valid bool[τ])
    -> (mu f32[N, M], var f32[N])`: the GP posterior of each current job's affinity row.

    Training inputs are the τ·N history (graph, affinity row) pairs, valid where `hist_valid & hist_job_mask`.
    One factorisation per decision, shared by all current jobs: with the series kernel, of the L × L
    system of its feature map when L < τ·N (`gp_predict_features`), else of K + σ²I.
    `beta_max` defaults to `BETA_M2_MAX / M²`, `series_terms` to the L of that bound (`series_terms_for`).
    Parameters: `machine_ffn` (W₂, b₂), `rho_raw`, `beta_raw`, `noise_raw`, `prior_mlp` (if learned).

    The call is `features` (per observation: its jobs' series features and prior means) then `posterior`
    (per decision): a training batch calls them apart, so that an observation shared by several decisions'
    histories is encoded once (`agents.das.DASActor.sequence`).
    """

    hidden: int = 64  # machine embedding size and prior-MLP width
    tau: int = 8
    prior_mean: str = "learned"  # or "zero" (the paper)
    beta_max: float | None = None
    series_terms: int | None = None
    kernel: str = "series"
    rho_init: float = 1.0
    noise_init: float = 0.1
    var_floor: float = 1e-4
    jitter: float = 1e-5

    def setup(self):
        if self.prior_mean not in PRIOR_MEANS:
            raise ValueError(
                f"unknown prior_mean '{self.prior_mean}'; choose one of {', '.join(PRIOR_MEANS)}"
            )
        const = lambda v: nn.initializers.constant(v)
        self.rho_raw = self.param("rho_raw", const(_inv_softplus(self.rho_init)), ())
        self.noise_raw = self.param("noise_raw", const(_inv_softplus(self.noise_init)), ())
        self.beta_raw = self.param("beta_raw", const(0.0), ())  # β·M² starts at half the bound
        self.machine_ffn = nn.Dense(self.hidden, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))
        if self.prior_mean == "learned":
            self.prior_mlp = PairMLP(self.hidden)

    def _beta_bound(self, m: int) -> tuple[float, int]:
        beta_max = BETA_M2_MAX / m**2 if self.beta_max is None else float(self.beta_max)
        if not 0 < beta_max * m**2 <= BETA_M2_SAFE:
            raise ValueError(f"beta_max·M² = {beta_max * m**2:g} must be in (0, {BETA_M2_SAFE:g}]")
        n_terms = self.series_terms or series_terms_for(beta_max * m**2)
        return beta_max, n_terms

    def _beta(self, m: int):
        beta_max, n_terms = self._beta_bound(m)
        return beta_max * nn.sigmoid(self.beta_raw), n_terms

    def _graphs_and_prior(self, job_emb, mach_obs):
        """`(job_emb f32[U, N, e], mach_obs f32[U, M, v]) -> (P f32[U, N, M, M], prior f32[U, N, M])`."""
        rho = nn.softplus(self.rho_raw)
        s_c = nn.relu(self.machine_ffn(mach_obs))  # [U, M, h]
        graphs = jax.vmap(job_machine_graphs, (0, 0, None))(job_emb, s_c, rho)
        if self.prior_mean == "learned":
            prior = self.prior_mlp(job_emb, s_c)
        else:
            prior = jnp.zeros(graphs.shape[:-1], job_emb.dtype)
        return graphs, prior

    def features(self, job_emb, mach_obs):
        """Per observation (series kernel): `(job_emb f32[U, N, e], mach_obs f32[U, M, v]) ->
        (psi f32[U, N, L], prior f32[U, N, M])`, each job's normalised series features and prior mean."""
        if self.kernel != "series":
            raise ValueError("RWGPHead.features needs the series kernel (a finite feature map)")
        graphs, prior = self._graphs_and_prior(job_emb, mach_obs)
        beta, n_terms = self._beta(mach_obs.shape[-2])
        return rw_series_features(graphs, beta, n_terms), prior

    def posterior(self, psi, prior, job_mask, hist_psi, hist_prior, hist_job_mask, hist_affinity, hist_valid):
        """Per decision, from `features`: `psi f32[N, L]`, `prior f32[N, M]`, `job_mask bool[N]`, the
        history's `hist_psi f32[τ, N, L]`, `hist_prior f32[τ, N, M]`, `hist_job_mask`, `hist_affinity`,
        `hist_valid` → `(mu f32[N, M], var f32[N])`; with a leading `[T]` on every input, T decisions."""
        noise = self._noise()
        jitter, var_floor = self.jitter, self.var_floor

        def one(psi, prior, job_mask, hist_psi, hist_prior, hist_job_mask, hist_affinity, hist_valid):
            train_mask, resid = _training_targets(hist_prior, hist_job_mask, hist_affinity, hist_valid)
            train = hist_psi.reshape(-1, psi.shape[-1])
            if psi.shape[-1] < train.shape[0]:  # the L × L system
                mu, var = gp_predict_features(train, psi, resid, prior, train_mask, noise, jitter, var_floor)
            else:  # the τN × τN one (the Gram of the same features)
                chol = masked_cholesky(train @ train.T, train_mask, noise, jitter)
                k_ss = jnp.sum(jnp.square(psi), axis=-1)  # the Gram's diagonal: 1 up to rounding
                mu, var = gp_predict(chol, psi @ train.T, k_ss, resid, prior, train_mask, var_floor)
            return _padded_rows(mu, var, job_mask)

        args = (psi, prior, job_mask, hist_psi, hist_prior, hist_job_mask, hist_affinity, hist_valid)
        return one(*args) if psi.ndim == 2 else jax.vmap(one)(*args)

    def posterior_from_stats(self, psi, prior, job_mask, gram, cross):
        """`posterior` from the history's summed GP stats (`RWGPStats.total`, or a selection of per-
        observation `decision_stats`): `psi f32[N, L]`, `prior f32[N, M]`, `job_mask bool[N]`, `gram
        f32[L, L]`, `cross f32[L, M]` → `(mu f32[N, M], var f32[N])`; a leading `[T]` on every input for T
        decisions. Always the L × L system (equal to the τN × τN one up to rounding)."""
        noise = self._noise()

        def one(psi, prior, job_mask, gram, cross):
            mu, var = gp_predict_stats(gram, cross, psi, prior, noise, self.jitter, self.var_floor)
            return _padded_rows(mu, var, job_mask)

        args = (psi, prior, job_mask, gram, cross)
        return one(*args) if psi.ndim == 2 else jax.vmap(one)(*args)

    def __call__(
        self,
        job_emb,
        mach_obs,
        job_mask,
        hist_job_emb,
        hist_mach_obs,
        hist_job_mask,
        hist_affinity,
        hist_valid,
    ):
        n = job_emb.shape[0]
        if hist_job_emb.shape[0] != self.tau:
            raise ValueError(f"history length {hist_job_emb.shape[0]} != tau {self.tau}")
        all_emb = jnp.concatenate([job_emb[None], hist_job_emb])  # [τ+1, N, e]: the current one first
        all_mach = jnp.concatenate([mach_obs[None], hist_mach_obs])
        hist = (hist_job_mask, hist_affinity, hist_valid)
        if self.kernel == "series":
            psi, prior = self.features(all_emb, all_mach)
            return self.posterior(psi[0], prior[0], job_mask, psi[1:], prior[1:], *hist)
        if self.kernel != "spectral":
            raise ValueError(f"unknown kernel '{self.kernel}'; choose one of {', '.join(KERNELS)}")
        # The spectral form has no feature map: the Gram of all (τ+1)·N graphs.
        m = mach_obs.shape[0]
        graphs, prior = self._graphs_and_prior(all_emb, all_mach)
        beta, n_terms = self._beta(m)
        all_graphs = graphs.reshape(-1, m, m)  # [(τ+1)N, M, M]
        gram = rw_gram(all_graphs, all_graphs, beta, self.kernel, n_terms)
        k_star, K = gram[:n, n:], gram[n:, n:]  # [N, τN], [τN, τN]
        k_ss = jnp.diagonal(gram)[:n]  # 1 up to rounding
        train_mask, resid = _training_targets(prior[1:], *hist)
        chol = masked_cholesky(K, train_mask, self._noise(), self.jitter)
        mu, var = gp_predict(chol, k_star, k_ss, resid, prior[0], train_mask, self.var_floor)
        return _padded_rows(mu, var, job_mask)

    def _noise(self):
        """σ² = softplus(noise_raw) + NOISE_FLOOR."""
        return nn.softplus(self.noise_raw) + NOISE_FLOOR


def _training_targets(hist_prior, hist_job_mask, hist_affinity, hist_valid):
    """The τ·N training points: `(mask bool[τN], resid f32[τN, M])`, valid where the slot holds a decision
    and the job was present; the targets are the sampled affinities minus the prior mean."""
    mask = (hist_valid[:, None] & hist_job_mask).reshape(-1)
    return mask, (hist_affinity - hist_prior).reshape(-1, hist_affinity.shape[-1])


def _padded_rows(mu, var, job_mask):
    """Padded current slots get μ = 0, v = 1."""
    return jnp.where(job_mask[:, None], mu, 0.0), jnp.where(job_mask, var, 1.0)


# ------------------------------------------------------------------------------------------------- action


def placement_distribution(mu, var, job_mask):
    """`Aᶜ_i ~ N(μ_i, v_i I_M)`: `(mu f32[N, M], var f32[N], job_mask bool[N])` → a distrax distribution
    with event shape [N, M]. Padded rows are N(0, 1), so sampling is finite everywhere; distrax cannot mask,
    so its `log_prob`/`entropy` include those rows: PPO uses `nn.das.masked_normal_log_prob`/`_entropy`."""
    mu, std = _masked_params(mu, var, job_mask)
    return distrax.Independent(distrax.Normal(mu, std), 2)


def _masked_params(mu, var, mask):
    std = jnp.broadcast_to(jnp.sqrt(var)[..., None], mu.shape)
    full = jnp.broadcast_to(mask[..., None], mu.shape)
    return jnp.where(full, mu, 0.0), jnp.where(full, std, 1.0)

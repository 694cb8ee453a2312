"""RWGP placement head: kernel forms against expm, Gram PSD, posterior against a float64 reference, the head
under jit/vmap (padding, empty and repeated history), gradients, equivariance, the history ring buffer."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.nn import rwgp
from jaxsched.nn.das import masked_normal_entropy, masked_normal_log_prob

N, M, TAU, E, U, V = 4, 3, 3, 8, 5, 5


def _graph(rng, m, e=4, rho=1.0):
    job = jnp.asarray(rng.normal(size=(1, e)), jnp.float32)
    mach = jnp.asarray(rng.normal(size=(m, e)), jnp.float32)
    return rwgp.job_machine_graphs(job, mach, rho)[0]


def _head_inputs(seed=0, n=N, m=M, tau=TAU):
    rng = np.random.default_rng(seed)
    f = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float32)
    return dict(
        job_emb=f(n, E) / 2,
        mach_obs=jnp.asarray(rng.uniform(size=(m, V)), jnp.float32),
        job_mask=jnp.asarray(np.arange(n) < n - 1),  # last slot padded
        hist_job_emb=f(tau, n, E) / 2,
        hist_mach_obs=jnp.asarray(rng.uniform(size=(tau, m, V)), jnp.float32),
        hist_job_mask=jnp.asarray(rng.uniform(size=(tau, n)) < 0.7),
        hist_affinity=f(tau, n, m),
        hist_valid=jnp.asarray(np.arange(tau) < tau - 1),  # last step not yet filled
    )


def _init(head, inputs):
    return jax.jit(head.init)(jax.random.PRNGKey(0), **inputs)


# ------------------------------------------------------------------------------------------------- graphs


def test_graphs_match_explicit_kronecker_features():
    rng = np.random.default_rng(1)
    job, mach, rho = rng.normal(size=(N, 3)), rng.normal(size=(M, 2)), 1.7
    P = np.asarray(
        rwgp.job_machine_graphs(jnp.asarray(job, jnp.float32), jnp.asarray(mach, jnp.float32), rho)
    )
    for i in range(N):
        feats = np.stack([np.kron(job[i], mach[k]) for k in range(M)])  # [M, e·e′]
        r = np.linalg.norm(feats[:, None] - feats[None], axis=-1) / rho
        ref = (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
        np.testing.assert_allclose(P[i], ref, atol=2e-6)
    assert np.allclose(np.diagonal(P, axis1=1, axis2=2), 1.0)


def test_graph_gradient_finite_at_zero_distance():
    mach = jnp.ones((M, 4))  # identical machines: every distance is 0, P = 11ᵀ
    g = jax.grad(lambda c, j: jnp.sum(rwgp.job_machine_graphs(j, c, 1.0)), argnums=(0, 1))(
        mach, jnp.ones((2, 4))
    )
    assert all(np.isfinite(np.asarray(x)).all() for x in g)


# ------------------------------------------------------------------------------------------------- kernel


def test_series_terms_bound():
    assert rwgp.series_terms_for(rwgp.BETA_M2_MAX) == 32
    x, n_terms = 8.0, rwgp.series_terms_for(8.0)
    tail = lambda n: sum(x**ell / math.factorial(ell) for ell in range(n, 120))
    assert tail(n_terms) < rwgp.SERIES_TOL <= tail(n_terms - 1)


@pytest.mark.parametrize("m", [3, 4])
def test_spectral_and_series_equal_expm(m):
    rng = np.random.default_rng(m)
    n_terms = rwgp.series_terms_for(rwgp.BETA_M2_MAX)
    spectral = jax.jit(rwgp.rw_kernel_spectral)
    series = jax.jit(rwgp.rw_kernel_series, static_argnums=3)
    cases = [(_graph(rng, m), _graph(rng, m, rho=3.0)) for _ in range(3)]
    cases.append((jnp.ones((m, m)), jnp.ones((m, m))))  # λ = M: the largest kernel value at every β
    cases.append((jnp.eye(m), jnp.ones((m, m))))
    for P, Q in cases:
        for x in (0.1, 2.0, rwgp.BETA_M2_MAX):  # β·M² over the allowed range, up to the bound
            beta = x / m**2
            ref = float(rwgp.rw_kernel_expm(P, Q, beta))
            assert abs(float(spectral(P, Q, beta)) / ref - 1) < 1e-5
            assert abs(float(series(P, Q, beta, n_terms)) / ref - 1) < 1e-5
    # The normalised all-ones kernel has a closed form: exp(β M²) scaled to exp(β(M − (M² + 1)/2)).
    beta = rwgp.BETA_M2_MAX / m**2
    gram = rwgp.rw_gram(
        jnp.stack([jnp.eye(m), jnp.ones((m, m))]),
        jnp.stack([jnp.eye(m), jnp.ones((m, m))]),
        beta,
        n_terms=n_terms,
    )
    np.testing.assert_allclose(gram[0, 1], np.exp(-beta * (m - 1) ** 2 / 2), rtol=1e-5)


def _moments_by_autodiff(P, n_terms):
    """The series moments by the recursion `rw_moments` runs, left to autodiff (its reference)."""
    v, out = jnp.ones(P.shape[:-1]), []
    for _ in range((n_terms + 1) // 2):
        w = jnp.einsum("...ij,...j->...i", P / P.shape[-1], v)
        out += [jnp.sum(v * v, -1), jnp.sum(v * w, -1)]
        v = w
    return jnp.stack(out[:n_terms], -1)


@pytest.mark.parametrize("n_terms", [1, 8, 21])
def test_series_moments_gradient(n_terms):
    """`rw_moments`' hand-written gradient equals autodiff of its recursion (symmetric graphs and any
    matrix), and on graphs the float64 gradient of `Σ_ℓ w_ℓ 1ᵀ(P/M)^ℓ 1` (symmetrised: the graph is)."""
    rng = np.random.default_rng(n_terms)
    graphs = jnp.stack([_graph(rng, 5, rho=r) for r in (0.5, 1.0, 3.0)])  # [3, 5, 5]
    weights = jnp.asarray(rng.normal(size=(3, n_terms)), jnp.float32)
    grad = lambda f, x: jax.jit(jax.grad(lambda p: jnp.sum(f(p, n_terms) * weights)))(x)  # noqa: E731
    for x in (graphs, jnp.asarray(rng.uniform(size=(3, 5, 5)), jnp.float32)):
        got, want = grad(rwgp.rw_moments, x), grad(_moments_by_autodiff, x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    g, w64 = np.asarray(grad(rwgp.rw_moments, graphs), np.float64), np.asarray(weights, np.float64)
    for b, P in enumerate(np.asarray(graphs, np.float64)):
        A, one = P / 5, np.ones(5)
        powers = [np.linalg.matrix_power(A, k) for k in range(n_terms)]
        # d/dA 1ᵀA^ℓ1 = Σ_{a+b=ℓ−1} (A^a 1)(A^b 1)ᵀ for symmetric A; d/dP = d/dA / M
        terms = (w64[b, ell] * np.outer(powers[a] @ one, powers[ell - 1 - a] @ one)
                 for ell in range(1, n_terms) for a in range(ell))  # fmt: skip
        ref = sum(terms, np.zeros((5, 5))) / 5
        np.testing.assert_allclose((g[b] + g[b].T) / 2, (ref + ref.T) / 2, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kernel", rwgp.KERNELS)
def test_gram_symmetric_psd_unit_diagonal(kernel):
    rng = np.random.default_rng(2)
    m = 5
    P = jnp.stack([_graph(rng, m, rho=float(r)) for r in rng.uniform(0.3, 3.0, size=24)])
    gram = np.asarray(rwgp.rw_gram(P, P, 0.5 * rwgp.BETA_M2_MAX / m**2, kernel, 32))
    np.testing.assert_allclose(gram, gram.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(gram), 1.0, atol=1e-5)
    assert np.linalg.eigvalsh(gram.astype(np.float64)).min() >= -1e-5


def test_series_and_spectral_gram_agree():
    rng = np.random.default_rng(3)
    m = 8
    P = jnp.stack([_graph(rng, m, rho=float(r)) for r in rng.uniform(0.3, 3.0, size=10)])
    beta = rwgp.BETA_M2_MAX / m**2
    np.testing.assert_allclose(
        rwgp.rw_gram(P, P, beta, "series", 32), rwgp.rw_gram(P, P, beta, "spectral"), atol=2e-6
    )


# ---------------------------------------------------------------------------------------------- posterior


def _posterior_ref(K, k_star, k_ss, y, prior_train, prior_star, mask, noise, jitter):
    K, k_star, y, prior_train, prior_star = (
        np.asarray(a, np.float64) for a in (K, k_star, y, prior_train, prior_star)
    )
    idx = np.flatnonzero(np.asarray(mask))  # the valid points only
    A = K[np.ix_(idx, idx)] + (noise + jitter) * np.eye(len(idx))
    ks = k_star[idx]
    mu = prior_star + ks @ np.linalg.solve(A, y[idx] - prior_train[idx])
    return mu, float(k_ss) - ks @ np.linalg.solve(A, ks)


def test_posterior_matches_float64_reference_with_masking():
    rng = np.random.default_rng(4)
    t, m = 12, 4
    P = jnp.stack([_graph(rng, m, rho=float(r)) for r in rng.uniform(0.5, 2.0, size=t + 1)])
    gram = np.asarray(rwgp.rw_gram(P, P, 4.0 / m**2, n_terms=32))
    K, k_star, k_ss = gram[1:, 1:], gram[0, 1:], gram[0, 0]
    y, prior_train, prior_star = rng.normal(size=(t, m)), rng.normal(size=(t, m)), rng.normal(size=m)
    mask = rng.uniform(size=t) < 0.6
    mask[0] = True
    # Garbage in the masked points' data must not matter.
    y_bad, k_bad = y.copy(), k_star.copy()
    y_bad[~mask], k_bad[~mask] = 1e3, 0.7
    post = jax.jit(rwgp.gp_posterior)
    mu, var = post(K, k_bad, k_ss, y_bad, prior_train, prior_star, mask, 0.05)
    mu_ref, var_ref = _posterior_ref(K, k_star, k_ss, y, prior_train, prior_star, mask, 0.05, 1e-5)
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(var, var_ref, rtol=1e-4, atol=1e-5)
    # Everything masked: the prior.
    mu, var = post(K, k_star, k_ss, y, prior_train, prior_star, np.zeros(t, bool), 0.05)
    np.testing.assert_allclose(mu, prior_star, rtol=1e-6)
    np.testing.assert_allclose(var, k_ss, rtol=1e-6)


def _feature_problem(seed, t=40, n_feat=12, b=3, m=4):
    """Unit-norm features (as the normalised series kernel's), targets, priors and a mask with garbage in
    the masked rows, float64."""
    rng = np.random.default_rng(seed)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    psi, psi_star = unit(rng.uniform(size=(t, n_feat))), unit(rng.uniform(size=(b, n_feat)))
    resid, prior_star = rng.normal(size=(t, m)), rng.normal(size=(b, m))
    mask = rng.uniform(size=t) < 0.6
    psi[~mask], resid[~mask] = 0.3, 1e3
    return psi, psi_star, resid, prior_star, mask


def test_feature_posterior_matches_float64_reference_and_its_gradients():
    """`gp_predict_features` (an L × L Woodbury system) is the T × T posterior of the Gram K = ΨΨᵀ: the
    values against the numpy reference, and the gradients in every input against `gp_predict` on the
    Gram, in float64; the float32 values within float32 rounding; all masked gives the prior."""
    psi, psi_star, resid, prior_star, mask = _feature_problem(0)
    noise, jitter = 0.05, 1e-5
    valid = np.where(mask[:, None], psi, 0.0)
    gram_ref = valid @ valid.T
    for i in range(len(psi_star)):
        mu_ref, var_ref = _posterior_ref(
            gram_ref, valid @ psi_star[i], psi_star[i] @ psi_star[i], resid, 0 * resid, prior_star[i], mask,
            noise, jitter,
        )  # fmt: skip
        mu, var = rwgp.gp_predict_features(psi, psi_star, resid, prior_star, mask, noise, jitter)
        np.testing.assert_allclose(mu[i], mu_ref, rtol=1e-4, atol=1e-4)  # float32
        np.testing.assert_allclose(var[i], var_ref, rtol=1e-3, atol=1e-6)

    def through_gram(psi, psi_star, resid, prior_star, noise):
        k_star = psi_star @ psi.T
        chol = rwgp.masked_cholesky(psi @ psi.T, mask, noise, jitter)
        k_ss = jnp.sum(jnp.square(psi_star), axis=-1)
        return rwgp.gp_predict(chol, k_star, k_ss, resid, prior_star, mask, 1e-9)

    def through_features(psi, psi_star, resid, prior_star, noise):
        return rwgp.gp_predict_features(psi, psi_star, resid, prior_star, mask, noise, jitter, 1e-9)

    def loss(posterior, *args):
        mu, var = posterior(*args)
        return jnp.sum(jnp.sin(mu)) + jnp.sum(jnp.log(var))

    with jax.enable_x64(True):
        args = tuple(jnp.asarray(a, jnp.float64) for a in (psi, psi_star, resid, prior_star, noise))
        for a, b in zip(through_features(*args), through_gram(*args), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        g_feat = jax.grad(functools.partial(loss, through_features), argnums=tuple(range(5)))(*args)
        g_gram = jax.grad(functools.partial(loss, through_gram), argnums=tuple(range(5)))(*args)
        for name, a, b in zip(
            ("psi", "psi_star", "resid", "prior_star", "noise"), g_feat, g_gram, strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, err_msg=name)
            assert np.abs(np.asarray(a)).sum() > 0, name  # every input matters
        assert np.all(np.asarray(g_feat[0])[~mask] == 0) and np.all(np.asarray(g_feat[2])[~mask] == 0)

    mu, var = rwgp.gp_predict_features(psi, psi_star, resid, prior_star, np.zeros(len(psi), bool), noise)
    np.testing.assert_allclose(mu, prior_star, rtol=1e-6)
    np.testing.assert_allclose(var, np.sum(psi_star**2, -1), rtol=1e-5)  # k** = ‖ψ*‖²: the prior's


def test_posterior_identical_history_finite():
    t, m = 16, 3
    K = jnp.ones((t, t))  # τ identical graphs: a rank-one Gram
    mu, var = rwgp.gp_posterior(
        K,
        jnp.ones(t),
        1.0,
        jnp.ones((t, m)),
        jnp.zeros((t, m)),
        jnp.zeros(m),
        jnp.ones(t, bool),
        rwgp.NOISE_FLOOR,
    )
    assert np.isfinite(np.asarray(mu)).all() and np.isfinite(float(var)) and float(var) > 0
    np.testing.assert_allclose(mu, t / (t + rwgp.NOISE_FLOOR), rtol=1e-3)


# --------------------------------------------------------------------------------------------------- head


@functools.cache
def _jitted_apply(head):
    return jax.jit(head.apply)


def _apply(head, params, inputs):
    return _jitted_apply(head)(params, **inputs)


def _finite(*xs):
    return all(np.isfinite(np.asarray(x)).all() for x in xs)


def test_head_jit_vmap_padding():
    head = rwgp.RWGPHead(hidden=16, tau=TAU)
    batch = [_head_inputs(s) for s in range(3)]
    params = _init(head, batch[0])
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *batch)
    mu, var = jax.jit(jax.vmap(lambda x: head.apply(params, **x)))(stacked)
    assert mu.shape == (3, N, M) and var.shape == (3, N) and _finite(mu, var)
    np.testing.assert_array_equal(mu[:, -1], 0.0)  # the padded slot
    np.testing.assert_array_equal(var[:, -1], 1.0)
    assert (var[:, :-1] >= head.var_floor).all() and (var <= 1.0 + 1e-5).all()
    for b in range(3):  # vmap = one at a time
        mu1, var1 = _apply(head, params, batch[b])
        np.testing.assert_allclose(mu[b], mu1, atol=1e-5)
        np.testing.assert_allclose(var[b], var1, atol=1e-5)


def test_head_all_invalid_history_gives_prior():
    x = _head_inputs(5) | {"hist_valid": jnp.zeros(TAU, bool)}
    zero = rwgp.RWGPHead(hidden=16, tau=TAU, prior_mean="zero")
    mu, var = _apply(zero, _init(zero, x), x)
    np.testing.assert_array_equal(mu, 0.0)
    np.testing.assert_allclose(var, 1.0, atol=1e-5)
    learned = rwgp.RWGPHead(hidden=16, tau=TAU)
    params = _init(learned, x)
    mu, var = _apply(learned, params, x)
    s_c = jax.nn.relu(
        x["mach_obs"] @ params["params"]["machine_ffn"]["kernel"] + params["params"]["machine_ffn"]["bias"]
    )
    prior = jax.jit(rwgp.PairMLP(16).apply)({"params": params["params"]["prior_mlp"]}, x["job_emb"], s_c)
    np.testing.assert_allclose(mu[:-1], prior[:-1], atol=1e-6)
    assert _finite(mu, var)


def test_head_identical_history_and_identical_machines():
    x = _head_inputs(6)
    rep = lambda a: jnp.broadcast_to(a[:1], a.shape)
    x |= {k: rep(x[k]) for k in ("hist_job_emb", "hist_mach_obs", "hist_job_mask", "hist_affinity")}
    x |= {"hist_valid": jnp.ones(TAU, bool), "mach_obs": jnp.ones((M, V))}  # P = 11ᵀ for every current job
    head = rwgp.RWGPHead(hidden=16, tau=TAU)
    params = _init(head, x)
    mu, var = _apply(head, params, x)
    assert _finite(mu, var)
    g = jax.jit(jax.grad(lambda p: sum(jnp.sum(out) for out in head.apply(p, **x))))(params)
    assert _finite(*jax.tree.leaves(g))


def test_head_gradients_finite_and_reach_every_parameter():
    x = _head_inputs(7)
    head = rwgp.RWGPHead(hidden=16, tau=TAU)
    params = _init(head, x)
    assert set(params["params"]) == {"rho_raw", "noise_raw", "beta_raw", "machine_ffn", "prior_mlp"}
    y = jnp.asarray(np.random.default_rng(0).normal(size=(N, M)), jnp.float32)

    def loss(p):
        mu, var = head.apply(p, **x)
        return masked_normal_log_prob(mu, jnp.sqrt(var), y, x["job_mask"])

    g = jax.jit(jax.grad(loss))(params)
    for path, leaf in jax.tree_util.tree_leaves_with_path(g):
        assert _finite(leaf), path
    for name in ("rho_raw", "noise_raw", "beta_raw"):
        assert float(jnp.abs(g["params"][name])) > 0, name
    assert float(jnp.abs(g["params"]["machine_ffn"]["kernel"]).sum()) > 0
    assert float(jnp.abs(g["params"]["prior_mlp"]["out"]["kernel"]).sum()) > 0


@pytest.mark.parametrize("n, tau", [(N, TAU), (8, 6)])
def test_head_spectral_matches_series(n, tau):
    """The series head against the spectral one, which always solves the τN × τN Gram system: with τN = 12
    below the series' L = 32 terms the series head does too; with τN = 48 it takes the L × L path."""
    x = _head_inputs(8, n=n, tau=tau)
    series, spectral = rwgp.RWGPHead(hidden=16, tau=tau), rwgp.RWGPHead(hidden=16, tau=tau, kernel="spectral")
    params = _init(series, x)
    for a, b in zip(_apply(series, params, x), _apply(spectral, params, x), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_head_permutation_equivariance():
    x = _head_inputs(9) | {"job_mask": jnp.asarray([True, False, True, True])}
    head = rwgp.RWGPHead(hidden=16, tau=TAU)
    params = _init(head, x)
    mu, var = _apply(head, params, x)
    perm = np.array([2, 0, 3, 1])
    mu_p, var_p = _apply(head, params, x | {"job_emb": x["job_emb"][perm], "job_mask": x["job_mask"][perm]})
    np.testing.assert_allclose(mu_p, mu[perm], atol=1e-5)
    np.testing.assert_allclose(var_p, var[perm], atol=1e-5)


def test_head_rejects_bad_config():
    x = _head_inputs(0)
    with pytest.raises(ValueError, match="beta_max"):
        _init(rwgp.RWGPHead(hidden=16, tau=TAU, beta_max=100.0), x)
    with pytest.raises(ValueError, match="tau"):
        _init(rwgp.RWGPHead(hidden=16, tau=TAU + 1), x)
    with pytest.raises(ValueError, match="prior_mean"):
        _init(rwgp.RWGPHead(hidden=16, tau=TAU, prior_mean="mlp"), x)


# ------------------------------------------------------------------------------------- history and action


def test_history_ring_buffer_order():
    hist = rwgp.RWGPHistory.empty(3, 2, M, U, V)
    assert hist.tau == 3 and not hist.valid.any()
    push = jax.jit(rwgp.RWGPHistory.push)
    for step in range(5):  # steps 0..4: slots hold 3, 4, 2 after wrapping
        hist = push(
            hist,
            jnp.full((2, U), step, jnp.float32),
            jnp.asarray([True, step % 2 == 0]),
            jnp.full((M, V), step, jnp.float32),
            jnp.full((2, M), step, jnp.float32),
        )
        assert int(hist.head) == (step + 1) % 3
        assert int(hist.valid.sum()) == min(step + 1, 3)
    np.testing.assert_array_equal(hist.job_obs[:, 0, 0], [3, 4, 2])
    np.testing.assert_array_equal(hist.affinity[:, 0, 0], [3, 4, 2])
    np.testing.assert_array_equal(hist.job_mask[:, 1], [False, True, True])
    np.testing.assert_array_equal(hist.chronological().mach_obs[:, 0, 0], [2, 3, 4])
    cleared = hist.clear()
    assert not cleared.valid.any() and int(cleared.head) == 0


def test_masked_log_prob_and_entropy():
    rng = np.random.default_rng(10)
    mu = jnp.asarray(rng.normal(size=(N, M)), jnp.float32)
    var = jnp.asarray(rng.uniform(0.1, 1.0, size=N), jnp.float32)
    x = jnp.asarray(rng.normal(size=(N, M)), jnp.float32)
    mask = jnp.asarray([True, True, False, True])
    std = np.sqrt(np.asarray(var))[:, None]
    ref = -0.5 * ((np.asarray(x) - np.asarray(mu)) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(
        masked_normal_log_prob(mu, jnp.sqrt(var), x, mask), ref[[0, 1, 3]].sum(), rtol=1e-5
    )
    # Padded rows: any content (even inf) contributes exactly 0.
    x_bad, mu_bad = x.at[2].set(jnp.inf), mu.at[2].set(jnp.nan)
    np.testing.assert_allclose(
        masked_normal_log_prob(mu_bad, jnp.sqrt(var), x_bad, mask), ref[[0, 1, 3]].sum(), rtol=1e-5
    )
    dist = rwgp.placement_distribution(mu, var, mask)
    assert dist.event_shape == (N, M)
    full = rwgp.placement_distribution(mu, var, jnp.ones(N, bool))
    np.testing.assert_allclose(
        full.log_prob(x), masked_normal_log_prob(mu, jnp.sqrt(var), x, jnp.ones(N, bool)), rtol=1e-5
    )
    np.testing.assert_allclose(
        masked_normal_entropy(mu, jnp.sqrt(var), jnp.ones(N, bool)), full.entropy(), rtol=1e-5
    )
    ent = masked_normal_entropy(mu, jnp.sqrt(var), mask)
    np.testing.assert_allclose(
        ent, M * np.sum(0.5 * np.log(2 * np.pi * np.e * np.asarray(var)[[0, 1, 3]])), rtol=1e-5
    )
    sample = dist.sample(seed=jax.random.PRNGKey(0))
    assert sample.shape == (N, M) and _finite(sample)

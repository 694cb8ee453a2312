"""The Philly-like DLT generator (`workloads.philly`): the bank's layout, the paper's mixes (§II-B, §IV-A),
the Weibull arrivals and their mean (and Fig. 8's scaling), the run times against the embedded quantile
table and against the Philly CSV it comes from, determinism, and a config error naming every field.

Statistical checks use 30 x 1000 jobs (SCED²'s data set) with bounds derived from the sample size: five
binomial standard deviations for a share, the Dvoretzky-Kiefer-Wolfowitz bound at 1e-6 for a whole CDF."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

from jaxsched.workloads import DLT_MODELS, RUNTIME_QUANTILES, PhillyConfig, generate_dlt_bank
from jaxsched.workloads.philly import CATEGORY_MODELS, runtime_from_uniform

E, N = 30, 1000  # episodes x jobs: the paper's training (or test) set
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "philly_runtime_table.py"
DEFAULT = PhillyConfig()
# Fig. 7's 75 % variant, Poisson arrivals (k = 1), twice the gaps, another category mix
VARIANT = PhillyConfig(
    single_gpu_share=0.75,
    multi_gpu_mix={4: 0.5, 8: 0.5},
    interarrival_shape=1.0,
    arrival_scale=2.0,
    category_mix={"cv": 0.8, "speech": 0.2},
    min_runtime=300,
)
Q = np.asarray(RUNTIME_QUANTILES)


def _bank(key: int, cfg: PhillyConfig) -> dict:
    w, starts, ends = generate_dlt_bank(jax.random.key(key), cfg, E, N)
    out = {f: np.asarray(getattr(w, f)) for f in ("job_id", "submit", "gpus", "duration", "model")}
    out["starts"], out["ends"] = np.asarray(starts), np.asarray(ends)
    out["rel"] = out["submit"].reshape(E, N) - out["submit"].reshape(E, N)[:, :1]  # per-episode clock
    return out


@pytest.fixture(scope="module")
def default():
    return _bank(0, DEFAULT)


@pytest.fixture(scope="module")
def variant():
    return _bank(0, VARIANT)


@pytest.fixture(scope="module", params=["default", "variant"])
def case(request, default, variant):
    return (DEFAULT, default) if request.param == "default" else (VARIANT, variant)


def _binomial_ok(count: int, n: int, p: float, sds: float = 5.0) -> bool:
    return abs(count / n - p) <= sds * math.sqrt(p * (1 - p) / n) + 1e-12


def _dkw(n: int, alpha: float = 1e-6) -> float:
    """sup |F_n - F| exceeds this with probability <= alpha (Dvoretzky-Kiefer-Wolfowitz, Massart)."""
    return math.sqrt(math.log(2 / alpha) / (2 * n))


def _table_cdf(x: np.ndarray) -> np.ndarray:
    """CDF of the run-time table: log-linear between quantiles, bin i holding probability 1/200."""
    p = np.linspace(0.0, 1.0, Q.size)
    return np.interp(np.log(x), np.log(Q), p, left=0.0, right=1.0)


# ---- layout --------------------------------------------------------------------------------------------


def test_bank_layout_whole_seconds_and_episode_clocks(case):
    cfg, b = case
    n = E * N
    assert b["submit"].dtype == np.float32 and b["duration"].dtype == np.float32
    assert b["job_id"].dtype == b["gpus"].dtype == b["model"].dtype == np.int32
    np.testing.assert_array_equal(b["job_id"], np.arange(n))
    np.testing.assert_array_equal(b["starts"], np.arange(E) * N)
    np.testing.assert_array_equal(b["ends"], np.arange(1, E + 1) * N)
    for f in ("submit", "duration"):
        np.testing.assert_array_equal(b[f], np.floor(b[f]))  # whole seconds
    assert b["duration"].min() >= max(1.0, cfg.min_runtime)
    assert b["duration"].max() <= Q[-1] + 0.5
    sub = b["submit"].reshape(E, N).astype(np.int64)
    assert (np.diff(sub, axis=1) >= 0).all()  # non-decreasing within each episode ...
    np.testing.assert_array_equal(sub[:, 0], 0)  # ... each its own timeline from 0
    assert set(np.unique(b["gpus"])) <= {1, *(g for g, _ in cfg.multi_gpu_mix)}
    assert ((b["model"] >= 0) & (b["model"] < len(DLT_MODELS))).all()


# ---- the paper's mixes ---------------------------------------------------------------------------------


def test_gpu_demand_shares(case):
    cfg, b = case
    g = b["gpus"]
    assert _binomial_ok(int((g == 1).sum()), g.size, cfg.single_gpu_share)
    multi = g[g > 1]
    for count, w in cfg.multi_gpu_mix:
        assert _binomial_ok(int((multi == count).sum()), multi.size, w), (count, w)


def test_model_and_category_mix(case):
    cfg, b = case
    m = b["model"]
    cats = dict(cfg.category_mix)
    for cat, models in CATEGORY_MODELS.items():
        idx = [DLT_MODELS.index(x) for x in models]
        assert _binomial_ok(int(np.isin(m, idx).sum()), m.size, cats[cat]), cat
        for i in idx:  # CV splits evenly over its four CNNs
            assert _binomial_ok(int((m == i).sum()), m.size, cats[cat] / len(models)), DLT_MODELS[i]


def test_paper_defaults():
    assert DEFAULT.single_gpu_share == 0.68 and DEFAULT.mean_interarrival == 172.0
    assert dict(DEFAULT.category_mix) == {"nlp": 0.6, "speech": 0.3, "cv": 0.1}
    np.testing.assert_allclose(DEFAULT.model_weights, [0.6, 0.3, 0.025, 0.025, 0.025, 0.025])


# ---- arrivals ------------------------------------------------------------------------------------------


def test_mean_interarrival_is_exact_and_scales(case):
    cfg, b = case
    k = cfg.interarrival_shape
    mean = cfg.mean_interarrival * cfg.arrival_scale
    gaps = np.diff(b["rel"], axis=1).astype(np.float64).ravel()
    cv = math.sqrt(math.gamma(1 + 2 / k) / math.gamma(1 + 1 / k) ** 2 - 1)
    # flooring the clock moves an episode's mean gap by < 1 / (N - 1) s
    assert abs(gaps.mean() - mean) <= 5 * cv * mean / math.sqrt(gaps.size) + 1 / (N - 1)
    assert math.isclose(cfg.interarrival_scale * math.gamma(1 + 1 / k), mean, rel_tol=1e-12)


def test_interarrival_gaps_are_weibull(case):
    cfg, b = case
    gaps = np.sort(np.diff(b["rel"], axis=1).ravel())
    weibull = stats.weibull_min(cfg.interarrival_shape, scale=cfg.interarrival_scale)
    x = np.unique(np.quantile(gaps, np.linspace(0.01, 0.99, 99)))
    f_n = np.searchsorted(gaps, x, side="right") / gaps.size
    eps = _dkw(gaps.size)
    # a gap between floored times is within 1 s of the true gap
    assert (f_n <= weibull.cdf(x + 1) + eps).all() and (f_n >= weibull.cdf(x - 1) - eps).all()


def test_default_arrivals_are_burstier_than_poisson(default):
    gaps = np.diff(default["rel"], axis=1).ravel()
    ratio = np.median(gaps) / gaps.mean()  # Weibull k = 0.5: (ln 2)^2 / 2 = 0.24; Poisson: ln 2 = 0.69
    assert 0.18 < ratio < 0.32


def test_arrival_scale_multiplies_the_gaps_and_nothing_else(default):
    b2 = _bank(0, DEFAULT.replace(arrival_scale=2.0))
    for f in ("gpus", "duration", "model"):
        np.testing.assert_array_equal(b2[f], default[f])
    excess = b2["rel"] - 2 * default["rel"]  # the clock doubles exactly; floor(2c) - 2 floor(c) is 0 or 1
    assert set(np.unique(excess)) <= {0.0, 1.0}


# ---- run times -----------------------------------------------------------------------------------------


def test_inverse_cdf_hits_the_table():
    j = np.arange(Q.size)
    at = np.asarray(runtime_from_uniform(np.asarray(j / (Q.size - 1), np.float32)))
    np.testing.assert_allclose(at, Q, rtol=2e-6)
    mid = np.asarray(runtime_from_uniform(np.asarray((j[:-1] + 0.5) / (Q.size - 1), np.float32)))
    np.testing.assert_allclose(mid, np.sqrt(Q[:-1] * Q[1:]), rtol=2e-5)  # log-linear: geometric mean


def test_runtimes_follow_the_table(default):
    d = np.sort(default["duration"])  # min_runtime 60 = the table's minimum: no floor mass
    x = np.unique(np.concatenate([Q, np.sqrt(Q[:-1] * Q[1:])]).round()) + 0.5  # rounding: d <= m <=> X < m+.5
    f_n = np.searchsorted(d, x, side="right") / d.size
    assert np.abs(f_n - _table_cdf(x)).max() <= _dkw(d.size)
    # a systematic shift by one bin moves the mean log run time by ~0.046; the bound here is ~0.06
    lo, hi = np.log(Q[:-1]), np.log(Q[1:])
    mean_log = np.mean((lo + hi) / 2)
    var_log = np.mean((lo**2 + lo * hi + hi**2) / 3) - mean_log**2
    assert abs(np.log(d).mean() - mean_log) <= 5 * math.sqrt(var_log / d.size)


def test_min_runtime_floors(variant):
    d = variant["duration"]
    assert d.min() == 300.0
    assert _binomial_ok(int((d == 300).sum()), d.size, float(_table_cdf(np.array([300.5]))[0]))


def test_table_is_recomputed_from_the_philly_csv(shared_data, default):
    csv = shared_data("gpu/alibaba_pai_v2020/philly_runtime.csv")
    spec = importlib.util.spec_from_file_location("philly_runtime_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    q, kept, total = mod.runtime_table(csv)
    assert (kept, total) == (75_226, 83_154)
    np.testing.assert_array_equal(q, Q)
    # The table's CDF stays within one bin (1/200) of the real run times' (it is 0.0024 off at worst:
    # ties at whole seconds), so the generated ones are within the DKW bound plus one bin of them.
    real = np.loadtxt(csv, delimiter=",", skiprows=1)
    real = np.sort(real[(real >= 60) & (real <= 7 * 86400)])
    x = np.unique(np.concatenate([real, default["duration"]])) + 0.5  # whole seconds: d <= m <=> d < m+.5
    real_cdf = np.searchsorted(real, x) / real.size
    assert np.abs(_table_cdf(x) - real_cdf).max() <= 1 / (Q.size - 1)
    d = np.sort(default["duration"])
    assert np.abs(np.searchsorted(d, x) / d.size - real_cdf).max() <= _dkw(d.size) + 1 / (Q.size - 1)


# ---- keys ----------------------------------------------------------------------------------------------


def test_same_key_same_bank_other_key_other_bank(default):
    again = _bank(0, DEFAULT)
    other = _bank(1, DEFAULT)
    for f in ("submit", "gpus", "duration", "model"):
        np.testing.assert_array_equal(again[f], default[f])
        assert (other[f] != default[f]).mean() > 0.2, f


def test_draws_are_independent(default):
    """Keys split, never reused: episodes differ, and no two per-job draws are correlated."""
    dur = default["duration"].reshape(E, N)
    assert (dur[0] != dur[1]).mean() > 0.9
    gaps = np.diff(default["rel"], axis=1)  # gap before job i+1
    pairs = {
        "gpus~duration": (default["gpus"], default["duration"]),
        "model~duration": (default["model"], default["duration"]),
        "gpus~model": (default["gpus"], default["model"]),
        "duration~next gap": (dur[:, 1:].ravel(), gaps.ravel()),
    }
    for name, (a, b) in pairs.items():
        rho = stats.spearmanr(a, b).statistic
        assert abs(rho) <= 5 / math.sqrt(a.size), (name, rho)


# ---- config and argument errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"single_gpu_share": 1.2}, "single_gpu_share"),
        ({"single_gpu_share": float("nan")}, "single_gpu_share"),
        ({"multi_gpu_mix": {2: 0.5, 4: 0.6}}, "multi_gpu_mix"),  # sums to 1.1
        ({"multi_gpu_mix": {2: 1.2, 4: -0.2}}, "multi_gpu_mix"),  # a negative weight
        ({"multi_gpu_mix": {1: 0.5, 4: 0.5}}, "multi_gpu_mix"),  # 1 GPU is not multi-GPU
        ({"multi_gpu_mix": {0: 1.0}}, "multi_gpu_mix"),
        ({"multi_gpu_mix": {2.5: 1.0}}, "multi_gpu_mix"),
        ({"multi_gpu_mix": {}}, "multi_gpu_mix"),
        ({"multi_gpu_mix": ((2, 0.5), (2, 0.5))}, "multi_gpu_mix"),
        ({"mean_interarrival": 0.0}, "mean_interarrival"),
        ({"mean_interarrival": float("inf")}, "mean_interarrival"),
        ({"interarrival_shape": -1.0}, "interarrival_shape"),
        ({"arrival_scale": 0.0}, "arrival_scale"),
        ({"arrival_scale": "2"}, "arrival_scale"),
        ({"category_mix": {"nlp": 0.6, "speech": 0.3}}, "category_mix"),  # sums to 0.9
        ({"category_mix": {"nlp": 0.5, "vision": 0.5}}, "category_mix"),  # unknown category
        ({"category_mix": {"nlp": 1.5, "cv": -0.5}}, "category_mix"),
        ({"min_runtime": 0}, "min_runtime"),
        ({"min_runtime": 60.5}, "min_runtime"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"^PhillyConfig\.{field}\b"):
        PhillyConfig(**kwargs)


def test_config_normalises_mixes():
    a = PhillyConfig(multi_gpu_mix={8: 0.5, 2: 0.5}, category_mix={"cv": 0.5, "nlp": 0.5})
    b = PhillyConfig(
        multi_gpu_mix=((2, 0.5), (8, 0.5)), category_mix=(("nlp", 0.5), ("speech", 0), ("cv", 0.5))
    )
    assert a == b and hash(a) == hash(b)
    assert a.multi_gpu_mix == ((2, 0.5), (8, 0.5))
    assert a.category_mix == (("nlp", 0.5), ("speech", 0.0), ("cv", 0.5))
    assert math.isclose(sum(a.model_weights), 1.0) and math.isclose(sum(p for _, p in a.gpu_weights), 1.0)


def test_bank_arguments_and_float32_horizon():
    for bad in ({"episodes": 0}, {"episode_jobs": 1.5}, {"episodes": True}):
        args = {"episodes": 2, "episode_jobs": 3, **bad}
        with pytest.raises(ValueError, match=next(iter(bad))):
            generate_dlt_bank(jax.random.key(0), DEFAULT, **args)
    with pytest.raises(ValueError, match="PhillyConfig"):
        generate_dlt_bank(jax.random.key(0), {"single_gpu_share": 0.5}, 2, 3)
    with pytest.raises(ValueError, match=r"2\*\*24"):  # ~38 gaps of 1e7 s: far past float32's whole seconds
        generate_dlt_bank(jax.random.key(0), DEFAULT.replace(mean_interarrival=1e7), 2, 20)

"""Tests of the Lublin–Feitelson '99 generator: invariants, determinism, the bank, the model's statistics
(against expectations computed independently from the constants), and closeness to `lublin_256.swf`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats
from scipy.special import gammainc

from jaxsched.workloads.base import Workload, validate_workload
from jaxsched.workloads.lublin import (
    BATCH,
    BATCH_PARAMS,
    INTERACTIVE,
    INTERACTIVE_PARAMS,
    LublinConfig,
    daily_cycle_weights,
    generate,
    generate_arrays,
    generate_bank,
)

N = 20_000
SWF = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hpc" / "lublin_256.swf"
BATCH_CFG = LublinConfig()
WHOLE_CFG = LublinConfig(whole_sample=True)
MIXED_CFG = LublinConfig(interactive=True)


def _np(out: dict) -> dict:
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def batch():
    return _np(generate_arrays(jax.random.key(0), BATCH_CFG, N))


@pytest.fixture(scope="module")
def whole():
    return _np(generate_arrays(jax.random.key(1), WHOLE_CFG, N))


@pytest.fixture(scope="module")
def mixed():
    return _np(generate_arrays(jax.random.key(2), MIXED_CFG, N))


# ----------------------------------------------------------------------------------------------------------
# Independent expectations from the model constants (numerical integration, float64)
# ----------------------------------------------------------------------------------------------------------


def _two_stage_grid(cfg: LublinConfig, cp, m: int = 200_000):
    """Midpoint grid over the two-stage uniform: (par values, their probability weights)."""
    lo, med, hi = cfg.uniform_bounds(cp)
    t = (np.arange(m) + 0.5) / m
    par = np.concatenate([lo + t * (med - lo), med + t * (hi - med)])
    wt = np.concatenate([np.full(m, cp.uprob / m), np.full(m, (1 - cp.uprob) / m)])
    return par, wt


def _parallel_size_law(cfg: LublinConfig, cp):
    """(E[log2 size], P(size is a power of two)) for parallel jobs (u > serial_prob), as in C."""
    q = min(1.0, cp.pow2_prob / (1.0 - cp.serial_prob))  # share of parallel jobs whose par is rounded
    par, wt = _two_stage_grid(cfg, cp)
    rounded = np.clip(np.floor(2.0 ** np.floor(par + 0.5) + 0.5), 1, cfg.n_nodes)
    plain = np.clip(np.floor(2.0**par + 0.5), 1, cfg.n_nodes)

    def pow2(s):
        return np.log2(s) == np.round(np.log2(s))

    mean_log2 = q * (wt * np.log2(rounded)).sum() + (1 - q) * (wt * np.log2(plain)).sum()
    p_pow2 = q * (wt * pow2(rounded)).sum() + (1 - q) * (wt * pow2(plain)).sum()
    return mean_log2, p_pow2


def _log_run_component(a: float, b: float, limit: float = 12.0, m: int = 400_000):
    """(P(X <= limit), E[log floor(exp X) | X <= limit]) for X ~ Gamma(a, scale b)."""
    x = (np.arange(m) + 0.5) * (limit / m)
    pdf = stats.gamma.pdf(x, a, scale=b) * (limit / m)
    mass = pdf.sum()
    return mass, (pdf * np.log(np.maximum(np.floor(np.exp(x)), 1.0))).sum() / mass


def _expected_log_run(cp, sizes: np.ndarray) -> float:
    """E[log run | drawn sizes]: hyper-gamma, whole mixture redrawn while > 12, then truncated to seconds."""
    c1, m1 = _log_run_component(cp.a1, cp.b1)
    c2, m2 = _log_run_component(cp.a2, cp.b2)
    p = np.clip(cp.pa * sizes + cp.pb, 0.0, 1.0)
    p_acc = p * c1 / (p * c1 + (1 - p) * c2)
    return float(np.mean(p_acc * m1 + (1 - p_acc) * m2))


def _interarrival_moments(cp, limit: float = 13.0):
    """(mean, sd) of exp(G) for G ~ Gamma(aarr * arar, barr) truncated at `limit`: the long-run gap."""
    g = stats.gamma(cp.aarr * cp.arar, scale=cp.barr)
    m = 400_000
    x = (np.arange(m) + 0.5) * (limit / m)  # midpoint rule (np.trapezoid needs numpy >= 2)
    pdf = g.pdf(x) * (limit / m) / g.cdf(limit)
    m1 = (np.exp(x) * pdf).sum()
    m2 = (np.exp(2 * x) * pdf).sum()
    return m1, np.sqrt(m2 - m1**2)


# ----------------------------------------------------------------------------------------------------------
# Invariants, determinism, Workload, bank
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["batch", "whole", "mixed"])
def test_shapes_dtypes_and_invariants(name, request):
    out = request.getfixturevalue(name)
    for f in ("submit", "run", "cores", "queue"):
        assert out[f].shape == (N,) and out[f].dtype == np.int32, f
    assert out["t0"].shape == () and out["t0"].dtype == np.int32 and out["t0"] >= 0
    assert out["submit"][0] == 0 and np.all(np.diff(out["submit"]) >= 0)
    assert out["run"].min() >= 1 and out["run"].max() <= int(np.exp(12.0))
    assert out["cores"].min() >= 1 and out["cores"].max() <= 256
    assert out["cores"].max() > 128  # the widest sizes are reachable
    expected_queues = {"batch": {BATCH}, "whole": {INTERACTIVE}, "mixed": {BATCH, INTERACTIVE}}[name]
    assert set(np.unique(out["queue"]).tolist()) == expected_queues


def test_determinism(batch):
    again = _np(generate_arrays(jax.random.key(0), BATCH_CFG, N))
    other = _np(generate_arrays(jax.random.key(7), BATCH_CFG, N))
    for f in ("submit", "run", "cores", "queue", "t0"):
        np.testing.assert_array_equal(again[f], batch[f])
    for f in ("submit", "run", "cores"):
        assert not np.array_equal(other[f], batch[f]), f


def test_generate_builds_valid_workload(batch):
    w = generate(jax.random.key(0), BATCH_CFG, N)
    assert isinstance(w, Workload) and w.num_jobs == N
    assert w.max_procs == 256 and w.max_nodes == 256 and w.procs_per_node == 1
    validate_workload(w, n_cores=256)
    for f in ("submit", "run", "cores", "queue"):
        np.testing.assert_array_equal(np.asarray(getattr(w, f)), batch[f])
    np.testing.assert_array_equal(np.asarray(w.req_time), batch["run"])
    np.testing.assert_array_equal(np.asarray(w.job_id), np.arange(1, N + 1))
    assert np.all(np.asarray(w.user) == -1)


def test_bank_slices_are_episodes_with_split_keys(batch):
    n_ep = 3
    key = jax.random.key(11)
    w, starts, ends = generate_bank(key, BATCH_CFG, n_ep, N)
    starts, ends = np.asarray(starts), np.asarray(ends)
    assert starts.dtype == np.int32 and ends.dtype == np.int32
    np.testing.assert_array_equal(starts, np.arange(n_ep) * N)
    np.testing.assert_array_equal(ends, np.arange(1, n_ep + 1) * N)
    assert w.num_jobs == n_ep * N and w.max_procs == 256
    validate_workload(w)  # sorted across episode boundaries too
    submit = np.asarray(w.submit)
    keys = jax.random.split(key, n_ep)  # the documented key schedule
    for e in range(n_ep):
        ep = _np(generate_arrays(keys[e], BATCH_CFG, N))
        sl = slice(starts[e], ends[e])
        if e > 0:  # episode e starts 1 s after episode e-1's last submit
            assert submit[starts[e]] == submit[ends[e - 1] - 1] + 1
        np.testing.assert_array_equal(submit[sl] - submit[starts[e]], ep["submit"])
        for f in ("run", "cores", "queue"):
            np.testing.assert_array_equal(np.asarray(getattr(w, f))[sl], ep[f])
    with pytest.raises(ValueError, match="n_episodes"):
        generate_bank(key, BATCH_CFG, 0, N)


# ----------------------------------------------------------------------------------------------------------
# The model's statistics
# ----------------------------------------------------------------------------------------------------------


def test_size_statistics_match_model(batch):
    cp, cores = BATCH_PARAMS, batch["cores"]
    frac_serial = np.mean(cores == 1)
    se = np.sqrt(cp.serial_prob * (1 - cp.serial_prob) / N)
    assert abs(frac_serial - cp.serial_prob) < 4 * se, (frac_serial, cp.serial_prob)

    par = cores[cores > 1]
    mean_log2, p_pow2 = _parallel_size_law(BATCH_CFG, cp)
    frac_pow2 = np.mean(np.log2(par) == np.round(np.log2(par)))
    # C rounds with unconditional probability pow2_prob, i.e. pow2_prob / (1 - serial_prob) of parallel jobs
    assert abs(frac_pow2 - p_pow2) < 4 * np.sqrt(p_pow2 * (1 - p_pow2) / par.size), (frac_pow2, p_pow2)
    assert frac_pow2 > cp.pow2_prob / (1 - cp.serial_prob) - 0.01

    log2 = np.log2(par)
    assert abs(log2.mean() - mean_log2) < 4 * log2.std() / np.sqrt(par.size), (log2.mean(), mean_log2)
    lo, med, hi = BATCH_CFG.uniform_bounds(cp)
    tsu_mean = (cp.uprob * lo + med + (1 - cp.uprob) * hi) / 2  # continuous two-stage-uniform mean
    assert abs(log2.mean() - tsu_mean) < 0.15, (log2.mean(), tsu_mean)


def test_runtime_statistics_match_model(batch):
    cp = BATCH_PARAMS
    logr = np.log(batch["run"].astype(np.float64))
    expected = _expected_log_run(cp, batch["cores"].astype(np.float64))
    assert abs(logr.mean() - expected) < 4 * logr.std() / np.sqrt(N), (logr.mean(), expected)
    p = np.clip(cp.pa * batch["cores"] + cp.pb, 0, 1)
    naive = np.mean(p * cp.a1 * cp.b1 + (1 - p) * cp.a2 * cp.b2)  # untruncated hyper-gamma mean
    assert abs(logr.mean() - naive) < 0.15, (logr.mean(), naive)
    # runtime depends on size as the model says: wide jobs use the long gamma more often
    assert np.median(batch["run"][batch["cores"] >= 64]) > np.median(batch["run"][batch["cores"] == 1])


def test_interarrival_matches_model_and_daily_cycle(batch):
    gaps = np.diff(batch["submit"]).astype(np.float64)
    mean, sd = _interarrival_moments(BATCH_PARAMS)
    assert abs(gaps.mean() - mean) < 5 * sd / np.sqrt(N), (gaps.mean(), mean)
    # arrivals per half-hour of the day follow the normalised cycle weights
    tod = ((batch["t0"] + batch["submit"].astype(np.int64)) % 86400) // 1800
    hist = np.bincount(tod, minlength=48) / N
    w = daily_cycle_weights(BATCH_PARAMS, BATCH_CFG)
    assert np.corrcoef(hist, w / 48)[0, 1] > 0.95
    assert np.abs(hist - w / 48).max() < 0.01
    # the C weights: w[(i-1) % 48] = F(i+.5) - F(i-.5), i = 11..58, F the Gamma(anum, bnum) cdf, mean 1
    i = np.arange(11, 59)
    raw = gammainc(BATCH_PARAMS.anum, (i + 0.5) / BATCH_PARAMS.bnum) - gammainc(
        BATCH_PARAMS.anum, (i - 0.5) / BATCH_PARAMS.bnum
    )
    np.testing.assert_allclose(w[(i - 1) % 48], raw / raw.mean(), rtol=1e-12)


def _c_calc_next_arrive(inc: np.ndarray, w: np.ndarray, start_bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """A literal port of m_lublin99.c's calc_next_arrive (float64): (C's truncating clock, exact time)."""
    points = reminder = 0.0
    bucket, clock, exact = start_bucket, 0, 0.0
    out_c, out_x = [], []
    for x in inc:
        points += x
        nxt = 0.0
        while points > w[bucket]:
            points -= w[bucket]
            bucket = (bucket + 1) % 48
            nxt += 1800
        new_reminder = points / w[bucket]
        nxt += 1800 * (new_reminder - reminder)
        reminder = new_reminder
        clock = int(clock + nxt)  # unsigned long time_from_begin += next_arrive
        exact += nxt
        out_c.append(clock)
        out_x.append(exact)
    return np.asarray(out_c), np.asarray(out_x)


@pytest.mark.parametrize("start_hour", [0, 9])
def test_arrival_clock_matches_c_loop(start_hour):
    from jaxsched.workloads.lublin import _arrival_clock

    rng = np.random.default_rng(start_hour)
    inc = (
        np.exp(np.minimum(rng.gamma(BATCH_PARAMS.aarr * BATCH_PARAMS.arar, BATCH_PARAMS.barr, 3000), 13))
        / 1800
    )
    w = daily_cycle_weights(BATCH_PARAMS, BATCH_CFG)
    ref_clock, ref_exact = _c_calc_next_arrive(inc, w, 2 * start_hour)
    inc32 = np.asarray(inc, np.float32)[None]
    c_like = np.asarray(_arrival_clock(inc32, w[None], 2 * start_hour, truncate_gaps=True))[0]
    exact = np.asarray(_arrival_clock(inc32, w[None], 2 * start_hour))[0]
    assert np.abs(c_like - ref_clock).max() <= 8  # float32 vs float64 rounding of a few gaps only
    assert np.abs(exact - np.floor(ref_exact)).max() <= 1  # floor of the exact time: no drift
    assert ref_exact[-1] - ref_clock[-1] > 1000  # ... while C's truncating clock drifts ~0.5 s per job


def test_load_scale_halves_interarrival(batch):
    fast = _np(generate_arrays(jax.random.key(0), BATCH_CFG.replace(load_scale=2.0), N))
    ratio = np.diff(fast["submit"]).mean() / np.diff(batch["submit"]).mean()
    assert 0.45 < ratio < 0.55, ratio
    np.testing.assert_array_equal(fast["cores"], batch["cores"])  # only arrivals change
    np.testing.assert_array_equal(fast["run"], batch["run"])


def test_interactive_mix(mixed):
    q, cores = mixed["queue"], mixed["cores"]
    for label, cp in ((INTERACTIVE, INTERACTIVE_PARAMS), (BATCH, BATCH_PARAMS)):
        n = np.sum(q == label)
        frac = np.mean(cores[q == label] == 1)
        assert abs(frac - cp.serial_prob) < 4 * np.sqrt(cp.serial_prob * (1 - cp.serial_prob) / n), (
            label,
            frac,
        )
    # each class is its own arrival stream: shares follow the two long-run arrival rates
    rate_i = 1 / _interarrival_moments(INTERACTIVE_PARAMS)[0]
    rate_b = 1 / _interarrival_moments(BATCH_PARAMS)[0]
    assert abs(np.mean(q == INTERACTIVE) - rate_i / (rate_i + rate_b)) < 0.03
    # interactive jobs are short and (on this machine) narrower than batch jobs
    assert np.median(mixed["run"][q == INTERACTIVE]) < np.median(mixed["run"][q == BATCH]) / 5
    assert mixed["cores"][q == INTERACTIVE].max() <= round(2 ** (8 - INTERACTIVE_PARAMS.uhi_offset))


# ----------------------------------------------------------------------------------------------------------
# Closeness to the real model output lublin_256.swf (DIR-LAB / RLScheduler "Lublin-1")
# ----------------------------------------------------------------------------------------------------------


def _read_swf(path: Path) -> dict:
    rows = [
        ln.split() for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith(";")
    ]
    a = np.asarray(rows, dtype=np.float64)
    procs = np.where(a[:, 4] > 0, a[:, 4], a[:, 7])  # allocated, else requested processors
    return {"submit": a[:, 1], "run": a[:, 3], "cores": procs, "queue": a[:, 14]}


def _summary(d: dict) -> dict:
    gaps = np.diff(d["submit"])
    return {
        "size median": float(np.median(d["cores"])),
        "size mean": float(np.mean(d["cores"])),
        "serial fraction": float(np.mean(d["cores"] == 1)),
        "run median (s)": float(np.median(d["run"])),
        "run mean (s)": float(np.mean(d["run"])),
        "inter-arrival mean (s)": float(gaps.mean()),
        "inter-arrival median (s)": float(np.median(gaps)),
    }


def test_close_to_lublin_256_swf(whole, batch):
    if not SWF.exists():
        pytest.skip(f"{SWF} not available")
    f = _read_swf(SWF)
    # lublin_256.swf was made by m_lublin99.c in its class-less mode: every job is labelled 0 (C's ACTIVE)
    assert np.all(f["queue"] == 0)
    ref, gen, bat = _summary(f), _summary(whole), _summary(batch)
    print(f"\n{'statistic':26s}{'lublin_256.swf':>16s}{'whole_sample':>14s}{'batch (default)':>17s}")
    for k in ref:
        print(f"{k:26s}{ref[k]:16.4g}{gen[k]:14.4g}{bat[k]:17.4g}")
    assert 1 / 1.5 <= gen["size median"] / ref["size median"] <= 1.5
    assert abs(gen["size mean"] / ref["size mean"] - 1) < 0.25
    assert 1 / 2 <= gen["run median (s)"] / ref["run median (s)"] <= 2
    assert abs(gen["inter-arrival mean (s)"] / ref["inter-arrival mean (s)"] - 1) < 0.35
    assert abs(gen["inter-arrival median (s)"] / ref["inter-arrival median (s)"] - 1) < 0.15
    assert abs(gen["serial fraction"] - ref["serial fraction"]) < 0.05
    # ... and not with the batch parameter set: its run times are several times longer
    assert bat["run median (s)"] / ref["run median (s)"] > 3


# ----------------------------------------------------------------------------------------------------------
# Configuration validation
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_nodes": 1}, "n_nodes"),
        ({"n_nodes": 64.0}, "n_nodes"),
        ({"load_scale": 0.0}, "load_scale"),
        ({"load_scale": -2.0}, "load_scale"),
        ({"load_scale": float("inf")}, "load_scale"),
        ({"start_hour": 24}, "start_hour"),
        ({"rejection_tries": 0}, "rejection_tries"),
        ({"max_log_runtime": 0.0}, "max_log_runtime"),
        ({"interactive": True, "whole_sample": True}, "whole_sample"),
        ({"batch": dataclasses.replace(BATCH_PARAMS, serial_prob=1.5)}, r"batch\.serial_prob"),
        ({"batch": dataclasses.replace(BATCH_PARAMS, uprob=-0.1)}, r"batch\.uprob"),
        ({"active": dataclasses.replace(INTERACTIVE_PARAMS, a1=0.0)}, r"active\.a1"),
        ({"batch": dataclasses.replace(BATCH_PARAMS, anum=1e4, bnum=1e-3)}, r"batch\.anum"),
        ({"n_nodes": 4}, r"batch\.ulow"),  # UMED = 2 - 2.5 < ULOW
    ],
)
def test_config_validation_names_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        LublinConfig(**kwargs)


def test_small_machine_config_works():
    cfg = LublinConfig(n_nodes=8, batch=dataclasses.replace(BATCH_PARAMS, ulow=0.8, umed_offset=1.5))
    assert cfg.uniform_bounds(cfg.batch) == (0.8, 1.5, 3.0)
    with pytest.raises(ValueError, match="n_jobs"):
        generate(jax.random.key(0), cfg, 0)

"""The GPU-locality env of SCED² (`jaxsched/envs/gpu_locality/env.py`, the semantics of `sced2_spec.md`)
against the plain-Python reference (`tests/reference/gpu_locality.py`).

  * Random workloads (bursts of simultaneous arrivals, mixed GPU demands up to the whole cluster, the six
    models, a random slowdown table or the env's default) and random action sequences (uniform over the
    valid actions, now and then an invalid one), with and without auto-forward: at every step every
    observation field, the reward and both flags agree, and the final metrics.
  * The six heuristics of `make_heuristic` (fifo, sif, dsif, saf, lrf, spf) against the reference ones:
    the same action at every step and the same final metrics.

`step_env` / `reset_env` / `metrics` are jitted once per config (every workload has `N_JOBS` jobs, so the
shapes never change) and driven from a Python loop that also steps the reference."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.gpu_locality import METRIC_KEYS, OBS_KEYS, RefGPULocality, ref_policy

from jaxsched.envs.gpu_locality.env import GPULocalityConfig, GPULocalityEnv
from jaxsched.workloads.dlt import DLTWorkload

KEY0 = jax.random.PRNGKey(0)  # one episode per params: the key does not matter
N_SERVERS, GPUS_PER_SERVER, WINDOW, N_LEVELS = 3, 4, 4, 3
N_JOBS = 24  # every workload: one compile per config
MAX_STEPS = 400  # a random episode takes ~100 decisions; more means it does not terminate
GPU_SIZES = (1, 1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 8, 12)  # up to N·M = 12
FLOAT_FIELDS = ("gpu", "jobs", "stats", "vec")
BOOL_FIELDS = ("mask", "present")
INT_FIELDS = ("gpus", "ideal", "wait", "model", "passed", "profile", "free", "t")
RTOL, ATOL = 1e-5, 1e-6
HEURISTICS = ("fifo", "sif", "dsif", "saf", "lrf", "spf")


# ---- workloads ------------------------------------------------------------------------------------
def gen_jobs(rng: np.random.Generator, n: int = N_JOBS) -> dict:
    """Integer-valued jobs in arrival order: bursts of simultaneous submits, mostly short ideal times
    (so that releases coincide too) and some long ones."""
    gaps = rng.choice([0, 0, 0, 0, 1, 2, 5, 10, 30, 100, 400], size=n)
    gaps[0] = 0
    submit = int(rng.integers(0, 100)) + np.cumsum(gaps)
    gpus = rng.choice(GPU_SIZES, size=n)
    ideal = rng.choice([1, 2, 5, 10, 10, 20, 30, 60], size=n) * rng.integers(1, 6, size=n)
    long = rng.random(n) < 0.2
    ideal[long] = rng.integers(100, 20000, size=int(long.sum()))
    model = rng.integers(0, 6, size=n)
    return {"submit": submit, "gpus": gpus, "ideal": ideal, "model": model}


def gen_slowdown(rng: np.random.Generator) -> np.ndarray:
    """f32[6, k]: column 0 is 1, then increasing; slowdown[:, 1] on both sides of 2 (and of 1.5)."""
    steps = rng.uniform(0.02, 1.6, size=(6, N_LEVELS - 1))
    steps[rng.random(steps.shape) < 0.2] = rng.choice([0.25, 0.5, 1.0])  # some exact values too
    return np.concatenate([np.ones((6, 1)), 1.0 + np.cumsum(steps, axis=1)], axis=1).astype(np.float32)


def bank_of(jobs: dict) -> DLTWorkload:
    n = len(jobs["submit"])
    return DLTWorkload(
        job_id=jnp.arange(n, dtype=jnp.int32),
        submit=jnp.asarray(jobs["submit"], jnp.float32),
        gpus=jnp.asarray(jobs["gpus"], jnp.int32),
        duration=jnp.asarray(jobs["ideal"], jnp.float32),
        model=jnp.asarray(jobs["model"], jnp.int32),
    )


# ---- the env, compiled once per config ----------------------------------------------------------
@functools.cache
def compiled(auto_forward: bool, work_conserving: bool = False):
    config = GPULocalityConfig(
        n_servers=N_SERVERS,
        gpus_per_server=GPUS_PER_SERVER,
        window=WINDOW,
        n_levels=N_LEVELS,
        auto_forward=auto_forward,
        work_conserving=work_conserving,
    )
    env = GPULocalityEnv(config)
    return env, jax.jit(env.reset_env), jax.jit(env.step_env), jax.jit(env.metrics)


@functools.cache
def compiled_heuristic(auto_forward: bool, name: str):
    from jaxsched.policies import make_heuristic

    env = compiled(auto_forward)[0]
    return jax.jit(make_heuristic(env, name))


def episode(auto_forward: bool, seed: int, work_conserving: bool = False, max_steps: int | None = None):
    """(env functions, params, reference) for one random workload; the reference reads the slowdown table
    back from the params (the env's default when the draw passes None). `max_steps`: the truncation guard
    (None: the env's default, never reached here)."""
    env, reset, step, metrics = compiled(auto_forward, work_conserving)
    rng = np.random.default_rng(seed)
    jobs = gen_jobs(rng)
    table = gen_slowdown(rng) if rng.random() < 0.8 else None
    sensitive_ratio, time_scale = ((2.0, 3600.0), (1.5, 600.0))[int(rng.integers(0, 2))]
    params = env.make_params(
        bank_of(jobs),
        starts=[0],
        ends=[N_JOBS],
        slowdown=table,
        sensitive_ratio=sensitive_ratio,
        time_scale=time_scale,
        max_steps=max_steps,
    )
    slowdown = np.asarray(params.slowdown)
    assert slowdown.shape == (6, N_LEVELS) and slowdown.dtype == np.float32
    np.testing.assert_array_equal(slowdown[:, 0], 1.0)
    if table is not None:
        np.testing.assert_array_equal(slowdown, table)
    max_steps = getattr(params, "max_steps", None)
    ref = RefGPULocality(
        N_SERVERS,
        GPUS_PER_SERVER,
        WINDOW,
        N_LEVELS,
        auto_forward,
        jobs,
        slowdown,
        sensitive_ratio=sensitive_ratio,
        time_scale=time_scale,
        max_steps=10**9 if max_steps is None else int(np.asarray(max_steps)),
        work_conserving=work_conserving,
    )
    return (reset, step, metrics), params, ref, rng


# ---- comparisons ---------------------------------------------------------------------------------
def check_dtypes(obs) -> None:
    """The spec's observation dtypes: floats, bools, ints."""
    for key in FLOAT_FIELDS:
        assert np.issubdtype(np.asarray(getattr(obs, key)).dtype, np.floating), key
    for key in BOOL_FIELDS:
        assert np.asarray(getattr(obs, key)).dtype == np.bool_, key
    for key in INT_FIELDS:
        assert np.issubdtype(np.asarray(getattr(obs, key)).dtype, np.integer), key


def assert_obs(want: dict, got, where: str) -> None:
    """Every observation field: floats to RTOL/ATOL, bools and ints exactly."""
    for key in OBS_KEYS:
        g = np.asarray(getattr(got, key))
        assert g.shape == want[key].shape, f"{where}: obs.{key} shape {g.shape} != {want[key].shape}"
        if key in FLOAT_FIELDS:
            np.testing.assert_allclose(g, want[key], rtol=RTOL, atol=ATOL, err_msg=f"{where}: obs.{key}")
        else:
            np.testing.assert_array_equal(g, want[key], err_msg=f"{where}: obs.{key}")


def assert_metrics(want: dict, got: dict, where: str) -> None:
    got = {k: float(np.asarray(v)) for k, v in got.items()}
    assert set(got) == set(METRIC_KEYS), f"{where}: metric keys {sorted(got)}"
    bad = {k: (want[k], got[k]) for k in METRIC_KEYS if not np.isclose(got[k], want[k], rtol=RTOL, atol=ATOL)}
    assert not bad, f"{where}: metrics (ref, env) differ: {bad}"


def step_both(fns, params, state, ref: RefGPULocality, action: int, where: str):
    """One decision in both simulators; compares the reward, flags and observation."""
    _, step, _ = fns
    obs, state, reward, term, trunc, _info = step(KEY0, state, np.int32(action), params)
    obs, reward, term, trunc = jax.device_get((obs, reward, term, trunc))
    want_obs, want_reward, want_term, want_trunc = ref.step(action)
    where = f"{where} action {action}"
    assert np.isclose(float(reward), want_reward, rtol=RTOL, atol=ATOL), (
        f"{where}: reward {float(reward)} != {want_reward}"
    )
    assert 0.0 <= float(reward) <= 1.0, f"{where}: E = {float(reward)} outside [0, 1]"  # Eq. 2
    assert (bool(term), bool(trunc)) == (want_term, want_trunc), (
        f"{where}: (terminated, truncated) {(bool(term), bool(trunc))} != {(want_term, want_trunc)}"
    )
    assert_obs(want_obs, obs, where)
    return obs, state, want_obs, want_term or want_trunc


def draw_action(rng: np.random.Generator, mask: np.ndarray) -> int:
    """Uniform over the valid actions; with probability 0.1 an invalid one (a slot that is empty or does
    not fit, or a masked φ) when there is one."""
    valid, invalid = np.flatnonzero(mask), np.flatnonzero(~mask)
    if invalid.size and (rng.random() < 0.1 or not valid.size):
        return int(rng.choice(invalid))
    return int(rng.choice(valid))


# ---- random action sequences ------------------------------------------------------------------------
def run_random(auto_forward: bool, seed: int, work_conserving: bool = False) -> dict:
    fns, params, ref, rng = episode(auto_forward, seed, work_conserving)
    reset, _, metrics = fns
    where = f"auto_forward={auto_forward} seed={seed}"
    obs, state = reset(KEY0, params)
    obs = jax.device_get(obs)
    check_dtypes(obs)
    want = ref.reset()
    assert_obs(want, obs, f"{where} reset")
    seen = {"invalid": 0, "masked_phi": 0, "passed": 0, "relaxed": 0, "behind": 0}
    for i in range(MAX_STEPS):
        if work_conserving:
            assert not (want["mask"][WINDOW] and want["mask"][:WINDOW].any()), f"{where}: φ beside a pick"
        action = draw_action(rng, want["mask"])
        seen["invalid"] += int(not want["mask"][action])
        seen["masked_phi"] += int(not want["mask"][WINDOW])
        seen["behind"] += int(want["stats"][0] > 0)
        obs, state, want, done = step_both(fns, params, state, ref, action, f"{where} step {i}")
        seen["passed"] += int(want["passed"].max() > 0)
        if done:
            break
    else:
        pytest.fail(f"{where}: not done after {MAX_STEPS} decisions")
    want_m = ref.metrics()
    assert_metrics(want_m, jax.device_get(metrics(state, params)), where)
    assert want_m["placed"] == N_JOBS
    seen["relaxed"] = int(want_m["multi_share_relaxed"] > 0)
    return seen


@pytest.mark.parametrize("chunk", range(3))
@pytest.mark.parametrize("auto_forward", [False, True])
def test_random_sequences_against_the_reference(auto_forward, chunk):
    """3 × 20 sequences per flag, 120 in all; the draws reach every path (invalid actions, masked φ,
    passed counters, jobs behind the window, relaxed placements)."""
    seeds = range(1000 * int(auto_forward) + 20 * chunk, 1000 * int(auto_forward) + 20 * (chunk + 1))
    totals = {}
    for seed in seeds:
        for k, v in run_random(auto_forward, seed).items():
            totals[k] = totals.get(k, 0) + v
    assert all(v > 0 for k, v in totals.items() if k != "masked_phi"), totals
    if not auto_forward:
        assert totals["masked_phi"] > 0, totals


def test_truncated_after_max_steps_decisions():
    """With `max_steps` = 7 an episode that needs more decisions is truncated on its 7th step, not before,
    as the reference is (flags compared at every step by `step_both`)."""
    fns, params, ref, rng = episode(False, 7, max_steps=7)
    reset, _, _ = fns
    _, state = reset(KEY0, params)
    want = ref.reset()
    flags = []
    for i in range(7):
        _, state, want, done = step_both(fns, params, state, ref, draw_action(rng, want["mask"]), f"step {i}")
        flags.append(done)
    assert flags == [False] * 6 + [True] and len(ref.placed) < N_JOBS


@pytest.mark.parametrize("auto_forward", [False, True])
def test_work_conserving_sequences_against_the_reference(auto_forward):
    """The ablation that masks φ while a job fits: 20 sequences per flag, and φ never beside a pick."""
    for seed in range(3000, 3020):
        run_random(auto_forward, seed, work_conserving=True)


# ---- heuristics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristics_against_the_reference(name):
    """`make_heuristic(env, name)` picks what the reference heuristic picks at every step of two workloads
    per flag, and the episodes end with the same metrics. The workloads (seeds 500, 558) are ones where
    DSIF both delays a scattered job (φ while a job fits) and later takes one at level > 0 after 3 passes,
    and SAF picks differently from SIF."""
    for auto_forward in (False, True):
        policy = compiled_heuristic(auto_forward, name)
        for seed in (500, 558):
            fns, params, ref, _ = episode(auto_forward, seed)
            reset, _, metrics = fns
            where = f"{name} auto_forward={auto_forward} seed={seed}"
            obs, state = reset(KEY0, params)
            want = ref.reset()
            assert_obs(want, jax.device_get(obs), f"{where} reset")
            for i in range(MAX_STEPS):
                action = int(policy(params, obs, KEY0))
                want_action = ref_policy(name, want)
                assert action == want_action, f"{where} step {i}: env heuristic {action} != ref {want_action}"
                obs, state, want, done = step_both(fns, params, state, ref, action, f"{where} step {i}")
                if done:
                    break
            else:
                pytest.fail(f"{where}: not done after {MAX_STEPS} decisions")
            assert ref.invalid == 0, f"{where}: the heuristic took {ref.invalid} invalid action(s)"
            assert_metrics(ref.metrics(), jax.device_get(metrics(state, params)), where)


def test_each_heuristic_by_its_own_key():
    """At t = 0 on an empty 3 × 4 cluster, four waiting jobs whose orders differ per key:
    A 8 GPUs × 100 s (GPU·s 800), B 1 × 1000 (1000), C 2 × 300 (600), D 12 × 50 (600; all 12 GPUs are
    free, so it fits). FIFO takes A (the first), SIF D (the shortest), LRF B (the fewest GPUs), SPF C (its
    600 ties with D's: the earlier arrival)."""
    env = GPULocalityEnv(GPULocalityConfig(N_SERVERS, GPUS_PER_SERVER, WINDOW, N_LEVELS, auto_forward=False))
    jobs = {
        "submit": [0, 0, 0, 0],
        "gpus": [8, 1, 2, 12],
        "ideal": [100, 1000, 300, 50],
        "model": [0, 0, 0, 0],
    }
    bank = DLTWorkload(
        job_id=jnp.arange(4, dtype=jnp.int32), submit=jnp.asarray(jobs["submit"], jnp.float32),
        gpus=jnp.asarray(jobs["gpus"], jnp.int32), duration=jnp.asarray(jobs["ideal"], jnp.float32),
        model=jnp.asarray(jobs["model"], jnp.int32),
    )  # fmt: skip
    params = env.make_params(bank)
    obs, _ = env.reset_env(KEY0, params)
    from jaxsched.policies import make_heuristic

    want = {"fifo": 0, "sif": 3, "lrf": 1, "spf": 2}
    got = {n: int(make_heuristic(env, n)(None, obs, KEY0)) for n in want}
    assert got == want


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(gpus=[1, 13, 2]), r"bank.gpus: job 1 asks for 13 GPUs, more than the cluster's 12 \(3 × 4\)"),
        (dict(gpus=[1, 0, 2]), r"bank.gpus must be >= 1"),
        (dict(model=[0, 6, 1]), r"bank.model must index DLT_MODELS"),
        (dict(submit=[0, 9, 5]), r"bank.submit must be non-decreasing inside each episode"),
        (dict(slowdown=np.ones((6, 2), np.float32)), r"slowdown must be \[6 models, 3 levels\]"),
        (dict(slowdown=np.full((6, 3), 0.5, np.float32)), r"slowdown must be finite, >= 1, and 1 at level 0"),
    ],
)
def test_make_params_refuses_bad_input_naming_the_field(change, message):
    env = GPULocalityEnv(GPULocalityConfig(N_SERVERS, GPUS_PER_SERVER, WINDOW, N_LEVELS))
    jobs = {"submit": [0, 5, 9], "gpus": [1, 4, 2], "model": [0, 1, 2]} | {
        k: v for k, v in change.items() if k != "slowdown"
    }
    bank = DLTWorkload(
        job_id=jnp.arange(3, dtype=jnp.int32), submit=jnp.asarray(jobs["submit"], jnp.float32),
        gpus=jnp.asarray(jobs["gpus"], jnp.int32), duration=jnp.full((3,), 10.0, jnp.float32),
        model=jnp.asarray(jobs["model"], jnp.int32),
    )  # fmt: skip
    with pytest.raises(ValueError, match=message):
        env.make_params(bank, slowdown=change.get("slowdown"))

"""The HPC (Deep Back-Filling) env: differential test against the plain-Python reference, properties,
the environment contract (traces, vmap, determinism, auto-reset, LogWrapper) and input validation."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax
from reference.hpc import RefHPC

from jaxsched.core import queue
from jaxsched.core.spaces import contains
from jaxsched.core.wrappers import LogWrapper
from jaxsched.envs.hpc import HPCConfig, HPCEnv
from jaxsched.workloads.base import make_workload

KEY0 = jax.random.PRNGKey(0)
METRIC_KEYS = (
    "avg_wait",
    "avg_queue_len",
    "utilization",
    "avg_job_load",
    "avg_bsld",
    "avg_slowdown",
    "placed",
    "queued",
    "overflow",
    "invalid",
    "steps",
    "elapsed",
)


# ---- workloads ------------------------------------------------------------------------------------
def gen_jobs(rng: np.random.Generator, n_jobs: int, n_cores: int, req_mode: str = "mixed") -> dict:
    """A small random trace: bursts of simultaneous arrivals, some full-machine and some serial jobs.

    `req_mode`: "exact" (requested = run), "overrun" (requested <= run), "mixed" (either per job),
    "early_finish" (requested >= run: jobs end before their request, see `test_sigma_is_zero_on_a_free_core`).
    """
    gaps = rng.choice([0, 0, 0, 1, 2, 3, 5, 8, 13, 25], size=n_jobs)
    submit = np.cumsum(gaps) + int(rng.integers(0, 5))
    run = rng.integers(1, 40, n_jobs)
    cores = rng.integers(1, n_cores + 1, n_jobs)
    cores[rng.random(n_jobs) < 0.15] = n_cores
    cores[rng.random(n_jobs) < 0.2] = 1
    shorter = np.maximum(1, run - rng.integers(0, 15, n_jobs))
    longer = run + rng.integers(0, 20, n_jobs)
    if req_mode == "exact":
        req = run.copy()
    elif req_mode == "overrun":
        req = shorter
    elif req_mode == "mixed":
        req = np.where(rng.random(n_jobs) < 0.5, run, shorter)
    elif req_mode == "early_finish":
        req = longer
    else:
        raise ValueError(req_mode)
    return {"submit": submit, "run": run, "cores": cores, "req_time": req}


def workload(jobs: dict, n_cores: int):
    """`max_procs` is static in the `Workload` pytree: fix it to the machine so that every workload of
    the same length has the same tree structure and reuses the compiled functions."""
    return make_workload(
        jobs["submit"], jobs["run"], jobs["cores"], req_time=jobs["req_time"], max_procs=n_cores
    )


def reference(env: HPCEnv, jobs: dict, params) -> RefHPC:
    cfg = env.config
    return RefHPC(
        cfg.n_cores,
        cfg.window_head,
        cfg.window_tail,
        cfg.queue_capacity,
        jobs,
        episode_jobs=int(params.episode_jobs),
        max_steps=int(params.max_steps),
        w=(float(params.w1), float(params.w2), float(params.w3)),
        runtime_norm=float(params.runtime_norm),
        wait_norm=float(params.wait_norm),
    )


# ---- a jitted rollout: one lax.scan over a whole action sequence ----------------------------------
def choose_action(mask: jax.Array, u: jax.Array, m: int) -> jax.Array:
    """A mix of Fwd (u0 < .3), a valid pick (u0 < .75; Fwd when none) and any slot (maybe invalid)."""
    valid = mask[:m]
    n_valid = jnp.sum(valid)
    k = jnp.minimum(jnp.floor(u[1] * n_valid).astype(jnp.int32), jnp.maximum(n_valid - 1, 0))
    kth_valid = jnp.argmax(jnp.cumsum(valid) == k + 1).astype(jnp.int32)
    any_slot = jnp.minimum(jnp.floor(u[1] * m).astype(jnp.int32), m - 1)
    pick = jnp.where(n_valid > 0, kth_valid, m)
    return jnp.where(u[0] < 0.3, m, jnp.where(u[0] < 0.75, pick, any_slot)).astype(jnp.int32)


@functools.cache
def scan_runner(config: HPCConfig):
    """`run(params, u: f32[T, 2]) -> (obs0, per-step outputs)` through `step_env` (no auto-reset).
    Compiled once per (config, shapes); params are arguments, so a new workload of the same size
    reuses the compiled program."""
    env = HPCEnv(config)
    m = config.window_size

    def run(params, u):
        obs, state = env.reset_env(KEY0, params)

        def body(carry, uu):
            obs, state = carry
            action = choose_action(obs.mask, uu, m)
            pos, present = queue.split_window(state.q_len, config.window_head, config.window_tail)
            slot = jnp.clip(action, 0, m - 1)
            job = jnp.where((action < m) & present[slot], state.q_job[pos[slot]], -1)
            obs2, state2, reward, term, trunc, info = env.step_env(KEY0, state, action, params)
            taken = state2.core_end != state.core_end
            out = {
                "action": action,
                "job": job,
                "vec": obs2.vec,
                "mask": obs2.mask,
                "t": obs2.t,
                "reward": reward,
                "terminated": term,
                "truncated": trunc,
                "placed": info["placed"],
                "invalid": info["invalid"],
                "overflow": info["overflow"],
                "metrics": env.metrics(state2, params),
                # for the property tests
                "q_len": state2.q_len,
                "n_busy": jnp.sum(state2.core_end > state2.t),
                "n_taken": jnp.sum(taken),
                "taken_were_free": jnp.all(jnp.where(taken, state.core_end <= state.t, True)),
                "core_end": state2.core_end,
                "obs_ok": contains(env.observation_space(params), obs2),
                "action_ok": env.action_space(params).contains(action),
            }
            return (obs2, state2), out

        _, outs = lax.scan(body, (obs, state), u)
        return obs, outs

    return env, jax.jit(run)


def replay(ref: RefHPC, start: int, end: int, actions) -> dict:
    """Drive the reference with `actions`; per-step arrays shaped like the scan's outputs."""
    vec0, mask0 = ref.reset(start, end)
    rows = {k: [] for k in ("vec", "mask", "reward", "terminated", "truncated", "t", "placed", "invalid")}
    rows.update({"overflow": [], "metrics": {k: [] for k in METRIC_KEYS}})
    for a in actions:
        before = (ref.placed, ref.invalid, ref.overflow)
        vec, mask, reward, term, trunc = ref.step(int(a))
        for k, v in zip(
            ("vec", "mask", "reward", "terminated", "truncated", "t"),
            (vec, mask, reward, term, trunc, ref.t),
            strict=True,
        ):
            rows[k].append(v)
        rows["placed"].append(ref.placed > before[0])
        rows["invalid"].append(ref.invalid > before[1])
        rows["overflow"].append(ref.overflow > before[2])
        for k, v in ref.metrics().items():
            rows["metrics"][k].append(v)
    out = {k: np.asarray(v) for k, v in rows.items() if k != "metrics"}
    out["metrics"] = {k: np.asarray(v, np.float64) for k, v in rows["metrics"].items()}
    out["vec0"], out["mask0"] = vec0, mask0
    return out


def first_mismatch(ref: dict, got: dict) -> int | None:
    """Index of the first step where anything differs (None when all agree)."""
    bad = np.zeros(len(ref["reward"]), bool)
    bad |= ~np.isclose(ref["vec"], got["vec"], rtol=1e-5, atol=1e-6).all(axis=1)
    bad |= (ref["mask"] != got["mask"]).any(axis=1)
    bad |= ~np.isclose(ref["reward"], got["reward"], rtol=1e-5, atol=1e-6)
    for k in ("terminated", "truncated", "t", "placed", "invalid", "overflow"):
        bad |= ref[k] != got[k]
    for k in METRIC_KEYS:
        bad |= ~np.isclose(ref["metrics"][k], got["metrics"][k], rtol=1e-4, atol=1e-5)
    idx = np.flatnonzero(bad)
    return int(idx[0]) if idx.size else None


N_JOBS, N_STEPS = 20, 96  # every differential/property rollout has these shapes (one compile per config)


def check_sequence(config: HPCConfig, seed: int, req_mode: str, n_jobs: int = N_JOBS, n_steps: int = N_STEPS):
    """One random workload, episode window and action sequence through both simulators."""
    env, run = scan_runner(config)
    rng = np.random.default_rng(seed)
    jobs = gen_jobs(rng, n_jobs, config.n_cores, req_mode)
    k = int(rng.integers(3, n_jobs + 1))
    start = int(rng.integers(0, n_jobs - k + 1))
    end = int(rng.integers(start + 1, n_jobs + 1)) if rng.random() < 0.3 else n_jobs
    w = rng.dirichlet([1.0, 1.0, 1.0]) if rng.random() < 0.5 else (1 / 3, 1 / 3, 1 / 3)
    params = env.make_params(
        workload(jobs, env.config.n_cores),
        starts=[start],
        ends=[end],
        episode_jobs=k,
        max_steps=int(rng.choice([15, 40, 1000])),
        w=tuple(w),
        wait_norm=float(rng.choice([50.0, 12 * 3600.0])),
    )
    u = rng.random((n_steps, 2)).astype(np.float32)
    obs0, outs = run(params, jnp.asarray(u))
    got = jax.tree.map(np.asarray, outs)
    ref = replay(reference(env, jobs, params), start, end, got["action"])
    np.testing.assert_allclose(ref["vec0"], np.asarray(obs0.vec), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ref["mask0"], np.asarray(obs0.mask))
    i = first_mismatch(ref, got)
    if i is not None:
        diff = {
            k: (ref[k][i], got[k][i])
            for k in ("reward", "terminated", "truncated", "t", "placed", "invalid", "overflow")
            if not np.isclose(ref[k][i], got[k][i], rtol=1e-5, atol=1e-6)
        }
        vec_bad = np.flatnonzero(~np.isclose(ref["vec"][i], got["vec"][i], rtol=1e-5, atol=1e-6))
        met_bad = {
            k: (ref["metrics"][k][i], got["metrics"][k][i])
            for k in METRIC_KEYS
            if not np.isclose(ref["metrics"][k][i], got["metrics"][k][i], rtol=1e-4, atol=1e-5)
        }
        pytest.fail(
            f"{config} seed={seed} mode={req_mode}: first mismatch at step {i} (action {got['action'][i]}): "
            f"{diff}; vec entries {vec_bad.tolist()} ref={ref['vec'][i][vec_bad]} "
            f"jax={got['vec'][i][vec_bad]}; "
            f"mask ref={ref['mask'][i]} jax={got['mask'][i]}; metrics {met_bad}"
        )
    return {
        "terminated": bool(got["terminated"].any()),
        "truncated": bool(got["truncated"].any()),
        "overflow": int(got["overflow"].sum()),
        "invalid": int(got["invalid"].sum()),
        "placed": int(got["placed"].sum()),
    }


DIFF_CONFIGS = {
    "head_only_8": HPCConfig(n_cores=8, window_head=4, window_tail=0, queue_capacity=16),
    "split_9_1_16": HPCConfig(n_cores=16, window_head=9, window_tail=1, queue_capacity=32),
    "tail_only_0_3_12": HPCConfig(n_cores=12, window_head=0, window_tail=3, queue_capacity=16),
    "tiny_queue_8": HPCConfig(n_cores=8, window_head=2, window_tail=1, queue_capacity=3),
    "split_3_2_10": HPCConfig(n_cores=10, window_head=3, window_tail=2, queue_capacity=6),
}


@pytest.mark.parametrize("name", list(DIFF_CONFIGS))
def test_differential_against_reference(name):
    """25 random sequences per config (125 in all): every reward, obs.vec, mask, flag and metric agrees."""
    config = DIFF_CONFIGS[name]
    seen = [check_sequence(config, seed, ("exact", "overrun", "mixed")[seed % 3]) for seed in range(25)]
    # the sequences exercise what they are meant to
    assert sum(s["placed"] for s in seen) > 50
    assert sum(s["invalid"] for s in seen) > 10
    assert any(s["terminated"] for s in seen) and any(s["truncated"] for s in seen)
    if name == "tiny_queue_8":
        assert sum(s["overflow"] for s in seen) > 0


def test_differential_jobs_ending_before_their_request():
    for seed in range(10):
        check_sequence(DIFF_CONFIGS["split_9_1_16"], seed, "early_finish")


def test_sigma_is_zero_on_a_free_core():
    """Minimal repro: 2 cores; job 0 runs 5 s but requested 10 s; after it ends σ must be 0."""
    env = HPCEnv(HPCConfig(n_cores=2, window_head=1, window_tail=0, queue_capacity=2))
    params = env.make_params(
        make_workload([0, 20], [5, 5], [1, 1], req_time=[10, 5]), starts=[0], episode_jobs=2
    )
    step = jax.jit(env.step_env)
    obs, state = jax.jit(env.reset)(KEY0, params)
    obs, state, *_ = step(KEY0, state, jnp.int32(0), params)  # start job 0 on core 0
    assert obs.sigma.tolist() == [10, 0]
    obs, state, *_ = step(KEY0, state, jnp.int32(env.fwd_action), params)  # → t = 5, it ends
    assert int(state.t) == 5 and int(state.core_end[0]) <= 5  # core 0 is free ...
    assert obs.sigma.tolist() == [0, 0]  # ... so σ_0 = 0


def test_bsld_reward_by_hand():
    """`reward="bsld"` on 2 cores: job 0 (2 cores, 100 s) starts at 0; job 1 (1 core, 20 s) arrives at
    10 and job 2 (1 core, 5 s) at 20; both start at 100 when job 0 ends. The forwards pay 0 (empty queue,
    0 → 10), 10 / 20 (job 1 waits 10 → 20) and 80 · (1/20 + 1/max(5, 10)) (20 → 100), over K = 3: the
    return is −(90/20 + 80/10) / 3, the jobs' waits over max(run, 10 s). The paper's reward on the same
    decisions is different (it is not this one by accident)."""
    wl = make_workload([0, 10, 20], [100, 20, 5], [2, 1, 1])
    returns = {}
    for kind in ("bsld", "dbf"):
        env = HPCEnv(HPCConfig(n_cores=2, window_head=3, window_tail=0, queue_capacity=4, reward=kind))
        params = env.make_params(wl, starts=[0], episode_jobs=3)
        step = jax.jit(env.step_env)
        obs, state = jax.jit(env.reset)(KEY0, params)
        fwd = jnp.int32(env.fwd_action)
        rewards = []
        for a in (0, fwd, fwd, fwd, 0, 0):  # start 0; t → 10, 20, 100; start 1 and 2 (slots shift)
            obs, state, r, term, *_ = step(KEY0, state, jnp.int32(a), params)
            rewards.append(float(r))
        assert bool(term) and int(state.placed) == 3 and float(state.sum_wait) == 170.0
        returns[kind] = sum(rewards)
        if kind == "bsld":
            np.testing.assert_allclose(rewards, [0, 0, -0.5 / 3, -12.0 / 3, 0, 0], rtol=1e-6)
    assert returns["bsld"] == pytest.approx(-(90 / 20 + 80 / 10) / 3, rel=1e-6)
    assert abs(returns["dbf"] - returns["bsld"]) > 0.1
    with pytest.raises(ValueError, match="HPCConfig.reward must be one of dbf, bsld"):
        HPCConfig(reward="slowdown")


# ---- hypothesis properties ------------------------------------------------------------------------
# Both reuse the differential test's compiled rollouts (same configs and shapes: 20 jobs, 96 steps).
PROP_JOBS = 20
SMALL_QUEUE = DIFF_CONFIGS["tiny_queue_8"]  # 8 cores, 2 + 1 window, 3 queue slots
ROOMY = DIFF_CONFIGS["split_9_1_16"]  # 16 cores, 9 + 1 window, 32 queue slots: nothing overflows

job_strategy = st.tuples(
    st.sampled_from([0, 0, 1, 2, 4, 9]),  # inter-arrival gap (0: simultaneous)
    st.integers(1, 30),  # run
    st.sampled_from([1, 1, 2, 3, 5, 8, 8]),  # cores (8 = the whole small machine)
    st.integers(-10, 10),  # requested - run
)
jobs_strategy = st.lists(job_strategy, min_size=PROP_JOBS, max_size=PROP_JOBS)


def jobs_from(drawn) -> dict:
    gap, run, cores, dreq = (np.asarray(x) for x in zip(*drawn, strict=True))
    return {"submit": np.cumsum(gap), "run": run, "cores": cores, "req_time": np.maximum(1, run + dreq)}


def check_invariants(got: dict, n_cores: int, capacity: int, jobs: dict):
    t = got["t"]
    assert (np.diff(t) >= 0).all(), "time went backwards"
    assert (got["q_len"] <= capacity).all() and (got["q_len"] >= 0).all()
    assert (got["n_busy"] <= n_cores).all()
    assert got["taken_were_free"].all(), "a job was given a busy core"
    placed_jobs = got["job"][got["placed"]]
    np.testing.assert_array_equal(got["n_taken"][got["placed"]], jobs["cores"][placed_jobs])
    assert (got["n_taken"][~got["placed"]] == 0).all()
    assert len(set(placed_jobs.tolist())) == len(placed_jobs), "a job was placed twice"
    assert got["obs_ok"].all() and np.isfinite(got["vec"]).all()
    assert got["action_ok"].all()
    assert not (got["terminated"] & got["truncated"]).any()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=jobs_strategy, seed=st.integers(0, 2**31 - 1))
def test_properties_random_actions_small_queue(drawn, seed):
    """Random (valid, invalid, Fwd) actions with a 3-slot queue: invariants hold at every step."""
    jobs = jobs_from(drawn)
    env, run = scan_runner(SMALL_QUEUE)
    params = env.make_params(workload(jobs, env.config.n_cores), starts=[0], episode_jobs=PROP_JOBS)
    u = np.random.default_rng(seed).random((N_STEPS, 2)).astype(np.float32)
    got = jax.tree.map(np.asarray, run(params, jnp.asarray(u))[1])
    check_invariants(got, SMALL_QUEUE.n_cores, SMALL_QUEUE.queue_capacity, jobs)
    m = {k: int(v[-1]) for k, v in got["metrics"].items() if k in ("placed", "queued", "overflow")}
    assert m["placed"] + m["queued"] + m["overflow"] <= PROP_JOBS


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=jobs_strategy, seed=st.integers(0, 2**31 - 1))
def test_every_job_placed_once_and_finishes(drawn, seed):
    """A random valid job whenever one fits, else Fwd (also after the episode): every job is placed
    exactly once, and within 96 decisions (<= 20 picks + 20 arrivals + 20 distinct releases) all end."""
    jobs = jobs_from(drawn)
    env, run = scan_runner(ROOMY)
    params = env.make_params(workload(jobs, env.config.n_cores), starts=[0], episode_jobs=PROP_JOBS)
    u = np.random.default_rng(seed).random((N_STEPS, 2)).astype(np.float32)
    u[:, 0] = 0.5  # choose_action: a random valid pick, Fwd when none
    got = jax.tree.map(np.asarray, run(params, jnp.asarray(u))[1])
    check_invariants(got, ROOMY.n_cores, ROOMY.queue_capacity, jobs)
    placed = got["job"][got["placed"]]
    assert sorted(placed.tolist()) == list(range(PROP_JOBS)), "every job placed exactly once"
    assert got["terminated"].any() and not got["truncated"].any()
    assert (got["core_end"][-1] <= got["t"][-1]).all(), "all cores free at the end"
    # a placement keeps the time, so the time after it is the job's start
    jax_starts = dict(zip(placed.tolist(), got["t"][got["placed"]].tolist(), strict=True))
    assert all(jax_starts[j] >= jobs["submit"][j] for j in jax_starts)
    # by the reference: the same starts, and every job finished after exactly its run time
    ref = reference(env, jobs, params)
    ref.reset(0)
    for a in got["action"]:
        ref.step(a)
    assert ref.starts == jax_starts
    assert sorted(ref.finished) == list(range(PROP_JOBS)) and not ref.running
    for j, (s, e) in ref.finished.items():
        assert e - s == jobs["run"][j]


# ---- the environment contract ---------------------------------------------------------------------
CONTRACT_CONFIG = HPCConfig(n_cores=8, window_head=3, window_tail=1, queue_capacity=8)


def contract_params(env, seed=0, episode_jobs=3, max_steps=1000, w=(1 / 3, 1 / 3, 1 / 3)):
    jobs = gen_jobs(np.random.default_rng(seed), 30, env.config.n_cores, "exact")
    return env.make_params(
        workload(jobs, env.config.n_cores), episode_jobs=episode_jobs, max_steps=max_steps, w=w
    )


def random_valid(env, obs, key):
    return jax.random.categorical(key, jnp.where(obs.mask, 0.0, -jnp.inf)).astype(jnp.int32)


def test_step_and_reset_trace_once():
    env = HPCEnv(CONTRACT_CONFIG)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def reset(key, params):
        return env.reset(key, params)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action, params):
        return env.step(key, state, action, params)

    for i, params in enumerate([contract_params(env, 0), contract_params(env, 1, 3, 50, (0.2, 0.3, 0.5))]):
        key = jax.random.PRNGKey(i)
        for _ in range(3):
            key, k1, k2 = jax.random.split(key, 3)
            obs, state = reset(k1, params)
            for _ in range(5):
                k2, ka, ks = jax.random.split(k2, 3)
                obs, state, *_ = step(ks, state, random_valid(env, obs, ka), params)


@functools.cache
def rollout_fn(config: HPCConfig, n_steps: int):
    """Auto-reset rollouts of a random valid policy: `(env, batched(keys: [B], params), single(key, params))`,
    each returning the reset `(obs, state)` and per step the action and `env.step`'s outputs.
    The env is wrapped in `LogWrapper` (its state is a `LogState`; `.env_state` is the env's)."""
    env = LogWrapper(HPCEnv(config))

    def single(key, params):
        key, k0 = jax.random.split(key)
        obs, state = env.reset(k0, params)

        def body(carry, k):
            obs, state = carry
            ka, ks = jax.random.split(k)
            action = random_valid(env, obs, ka)
            obs2, state2, reward, term, trunc, info = env.step(ks, state, action, params)
            out = {
                "action": action,
                "obs": obs2,
                "state": state2,
                "reward": reward,
                "terminated": term,
                "truncated": trunc,
                "info": {k: v for k, v in info.items() if k not in ("placed", "invalid", "overflow")},
            }
            return (obs2, state2), out

        _, outs = lax.scan(body, (obs, state), jax.random.split(key, n_steps))
        return (obs, state), outs

    return env, jax.jit(jax.vmap(single, in_axes=(0, None))), jax.jit(single)


def test_vmap_equals_python_loop():
    env, batched, single = rollout_fn(CONTRACT_CONFIG, 40)
    params = contract_params(env, 2, episode_jobs=3, max_steps=12)
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    got = jax.device_get(batched(keys, params))
    loop = [jax.device_get(single(k, params)) for k in keys]
    chex.assert_trees_all_close(got, jax.tree.map(lambda *x: np.stack(x), *loop), rtol=1e-6, atol=1e-6)
    assert (got[1]["terminated"] | got[1]["truncated"]).sum() >= 8  # several auto-resets ...
    assert (
        len(set(got[1]["state"].env_state.t0.ravel().tolist())) > 4
    )  # ... which drew different episode starts


def test_same_seed_same_result_bitwise():
    env, batched, _ = rollout_fn(CONTRACT_CONFIG, 40)
    params = contract_params(env, 3)
    keys = jax.random.split(jax.random.PRNGKey(11), 4)
    a = batched(keys, params)
    b = batched(keys, params)
    chex.assert_trees_all_equal(a, b)
    c = batched(jax.random.split(jax.random.PRNGKey(12), 4), params)
    assert not np.array_equal(np.asarray(a[1]["action"]), np.asarray(c[1]["action"]))


def test_auto_reset_final_observation_and_metrics():
    """Through `env.step` (auto-reset), episode after episode, against the reference: on the last step of
    an episode `final_observation` is the terminal observation and `episode_metrics` its metrics, while
    the returned state is a fresh reset."""
    env, _, single = rollout_fn(CONTRACT_CONFIG, 40)
    params = contract_params(env, 4, episode_jobs=3, max_steps=7)
    jobs = jax.device_get({k: getattr(params.bank, k) for k in ("submit", "run", "req_time", "cores")})
    submits = set(jobs["submit"][np.asarray(params.starts)].tolist())
    ends = {"terminated": 0, "truncated": 0}
    for seed in (5, 6):
        (obs0, state0), out = jax.device_get(single(jax.random.PRNGKey(seed), params))
        term, trunc = out["terminated"], out["truncated"]
        assert not (term & trunc).any()
        np.testing.assert_array_equal(out["info"]["done"], term | trunc)
        ref = reference(env, jobs, params)
        ref.reset(int(state0.env_state.q_job[0]))
        for i in range(len(term)):
            vec, mask, reward, ref_term, ref_trunc = ref.step(int(out["action"][i]))
            assert (ref_term, ref_trunc) == (term[i], trunc[i])
            np.testing.assert_allclose(out["reward"][i], reward, rtol=1e-5, atol=1e-6)
            # the pre-reset observation: the terminal one on the last step, else the step's own
            final = jax.tree.map(lambda x, i=i: x[i], out["info"]["final_observation"])
            np.testing.assert_allclose(final.vec, vec, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(final.mask, mask)
            if not (term[i] or trunc[i]):
                chex.assert_trees_all_equal(final, jax.tree.map(lambda x, i=i: x[i], out["obs"]))
                continue
            ends["terminated" if term[i] else "truncated"] += 1
            for k, v in ref.metrics().items():
                np.testing.assert_allclose(
                    out["info"]["episode_metrics"][k][i], v, rtol=1e-4, atol=1e-5, err_msg=k
                )
            # the returned state: nothing placed, one job queued at its submit time, empty cluster
            state = jax.tree.map(lambda x, i=i: x[i], out["state"].env_state)
            assert state.steps == 0 and state.placed == 0 and state.q_len == 1 and state.w_now == 0.0
            assert state.t == state.t0 and int(state.t) in submits
            assert jobs["submit"][state.q_job[0]] == state.t
            assert not state.core_end.any() and state.area_busy == 0.0
            vec0, mask0 = ref.reset(int(state.q_job[0]))  # the next episode, in the reference too
            np.testing.assert_allclose(out["obs"].vec[i], vec0, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(out["obs"].mask[i], mask0)
    assert ends["terminated"] > 0 and ends["truncated"] > 0


def test_log_wrapper_accumulates_episode_return():
    env, _, single = rollout_fn(CONTRACT_CONFIG, 40)
    params = contract_params(env, 5, episode_jobs=3, max_steps=15)
    _, out = jax.device_get(single(jax.random.PRNGKey(3), params))
    reward, term, trunc, info = out["reward"], out["terminated"], out["truncated"], out["info"]
    assert not (term & trunc).any()
    ret, length, n_done = 0.0, 0, 0
    for i in range(len(reward)):
        ret += float(reward[i])
        length += 1
        done = bool(term[i] or trunc[i])
        assert bool(info["returned_episode"][i]) == done
        if done:
            n_done += 1
            np.testing.assert_allclose(info["returned_episode_returns"][i], ret, rtol=1e-5, atol=1e-5)
            assert int(info["returned_episode_lengths"][i]) == length
            assert int(info["returned_episode_metrics"]["steps"][i]) == length
            ret, length = 0.0, 0
        else:
            np.testing.assert_allclose(out["state"].episode_return[i], ret, rtol=1e-5, atol=1e-5)
    assert n_done >= 3


# ---- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"n_cores": 0}, "n_cores"),
        ({"n_cores": -4}, "n_cores"),
        ({"queue_capacity": 0}, "queue_capacity"),
        ({"window_head": -1}, "window_head"),
        ({"window_tail": -1}, "window_tail"),
        ({"window_head": 0, "window_tail": 0}, "window_head"),
        ({"window_head": 9, "window_tail": 1, "queue_capacity": 5}, "queue_capacity"),
    ],
)
def test_config_rejects_bad_sizes(kwargs, field):
    with pytest.raises(ValueError, match=field):
        HPCConfig(**kwargs)


def test_make_params_rejects_bad_workloads():
    env = HPCEnv(HPCConfig(n_cores=8, window_head=2, window_tail=1, queue_capacity=4))
    wide = make_workload([0, 1, 2], [5, 5, 5], [2, 9, 1])  # 9 cores on an 8-core machine
    with pytest.raises(ValueError, match="cores"):
        env.make_params(wide, episode_jobs=2)
    with pytest.raises(ValueError, match="submit"):
        make_workload([0, 5, 3], [5, 5, 5], [1, 1, 1])
    unsorted = make_workload([0, 5, 3], [5, 5, 5], [1, 1, 1], validate=False)
    with pytest.raises(ValueError, match="submit"):
        env.make_params(unsorted, episode_jobs=2)
    ok = make_workload([0, 1, 2], [5, 5, 5], [1, 2, 8])
    with pytest.raises(ValueError, match="episode_jobs"):
        env.make_params(ok, episode_jobs=4)
    with pytest.raises(ValueError, match="episode_jobs"):
        env.make_params(ok, episode_jobs=0)
    with pytest.raises(ValueError):
        env.make_params(ok, starts=[0, 2], ends=[3, 2], episode_jobs=1)  # empty window
    env.make_params(ok, episode_jobs=3)  # the same trace is fine


def test_waiting_time_stays_exact_past_float32_integers():
    """W(t), the reward's waiting term, is kept as an exact integer (`core.wideint`) and rounded once. A
    machine held by one 2·10^9-s job and 300 arrivals 10^5 s apart, always Fwd: W passes 2^31 (and
    float32's exact integers, 2^24, early on); the env's `w_now` is the float64 sum of the waits within one
    float32 rounding at every step (a float32 running or re-summed total drifts further)."""
    n = 301
    submit = np.arange(n) * 100_000
    env = HPCEnv(HPCConfig(n_cores=2, window_head=2, window_tail=1, queue_capacity=512))
    wl = make_workload(submit, [2_000_000_000] + [10] * (n - 1), [2] * n)
    params = env.make_params(wl, starts=[0], episode_jobs=n)
    step = jax.jit(env.step_env)
    obs, state = jax.jit(env.reset)(KEY0, params)
    obs, state, *_ = step(KEY0, state, jnp.int32(0), params)  # job 0 takes the machine
    fwd = jnp.int32(env.fwd_action)
    for _ in range(n - 1):
        obs, state, *_ = step(KEY0, state, fwd, params)
        t, queued = int(state.t), np.asarray(state.q_job)[: int(state.q_len)]
        exact = float(np.sum(t - submit[queued], dtype=np.float64))
        assert float(state.w_now) == pytest.approx(exact, rel=2.0**-23, abs=0.0)
    assert exact > 2**31

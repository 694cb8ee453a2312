"""OSDEC's deferrable-job cloud against its plain-Python reference (tests/reference/deferrable.py): random
score sequences, the heuristics, hand cases for the take rule, expiry and violation, and invariants."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.deferrable import RefDeferrable, heuristic_scores

import jaxsched
from jaxsched.envs.deferrable import DeferrableConfig, DeferrableEnv
from jaxsched.experiments.evaluate import evaluate_policies
from jaxsched.policies import make_heuristic
from jaxsched.workloads.deferrable import generate_bank, make_bank, preset

HORIZON, SLOTS, MAX_CAP = 12, 5, 10


def random_episode(rng: np.random.Generator) -> tuple[dict, np.ndarray]:
    """A small episode that exercises every rule: capacity dropping to 0, ties, a full pending buffer,
    real-time jobs (e = l = g) mixed with windows."""
    cap = rng.integers(0, MAX_CAP + 1, HORIZON)
    cap[rng.integers(HORIZON)] = MAX_CAP  # the peak bounds the cores
    n = int(rng.integers(3, 30))
    submit = np.sort(rng.integers(0, HORIZON, n))
    earliest = submit + rng.integers(0, 4, n) * (rng.random(n) < 0.8)
    latest = earliest + rng.integers(0, 4, n)
    jobs = {"cores": rng.integers(1, 5, n), "duration": rng.integers(1, 6, n), "earliest": earliest,
            "latest": latest, "submit": submit}  # fmt: skip
    return jobs, cap


def bank_of(episodes):
    return make_bank([e for e, _ in episodes], np.stack([c for _, c in episodes]), source="test")


@functools.cache
def rollout_program(defer_negative: bool):
    """`run(params, episode, scores [T, N]) -> per-step outputs`: one episode from a chosen bank episode,
    each job's score at step t read from `scores[t, job]`."""
    env = DeferrableEnv(DeferrableConfig(SLOTS, MAX_CAP, defer_negative))

    def run(params, episode, scores):
        state = env.start_episode(episode, params)

        def body(state, t):
            obs = env.observe(state, params)
            action = scores[t, jnp.maximum(obs.p_id, 0)]
            _, nxt, reward, term, _, info = env.step_env(jax.random.key(0), state, action, params)
            out = {"reward": reward, "p_id": obs.p_id, "candidate": obs.candidate, "r_id": obs.r_id,
                   "load": obs.load, "capacity": obs.capacity, "terminated": term,
                   "started": info["started_ids"], "history": obs.history}  # fmt: skip
            return nxt, out

        last, outs = jax.lax.scan(body, state, jnp.arange(HORIZON))
        return outs, env.metrics(last, params)

    return env, jax.jit(jax.vmap(run, (None, 0, 0)))


def compare_with_reference(jobs, cap, outs, metrics, scores, defer_negative, b):
    ref = RefDeferrable(jobs, cap, HORIZON, SLOTS, defer_negative=defer_negative)
    for t in range(HORIZON):
        ids = outs["p_id"][b, t]
        assert sorted(ids[ids >= 0].tolist()) == sorted(ref.pending), (b, t)
        cand = ids[outs["candidate"][b, t]]
        assert sorted(cand.tolist()) == sorted(ref.candidates()), (b, t)
        running = outs["r_id"][b, t]
        assert sorted(running[running >= 0].tolist()) == sorted(ref.running), (b, t)
        assert outs["load"][b, t] == ref.load() and outs["capacity"][b, t] == cap[t]
        k = outs["history"].shape[2]
        np.testing.assert_allclose(outs["history"][b, t], ref.last_rows(k), rtol=1e-6, err_msg=f"{b} {t}")
        reward = ref.step({j: float(scores[b, t, j]) for j in ref.pending})
        np.testing.assert_allclose(outs["reward"][b, t], reward, rtol=1e-6, atol=1e-4, err_msg=f"{b} {t}")
        assert bool(outs["terminated"][b, t]) == ref.done
    for k, v in ref.metrics().items():
        np.testing.assert_allclose(metrics[k][b], v, rtol=1e-6, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("defer_negative,n_seq", [(False, 64), (True, 40)])
def test_differential_random_scores(defer_negative, n_seq):
    """104 random score sequences over random episodes (ties: scores from five values)."""
    rng = np.random.default_rng(7 + defer_negative)
    episodes = [random_episode(rng) for _ in range(n_seq)]
    bank = bank_of(episodes)
    env, run = rollout_program(defer_negative)
    params = env.make_params(bank, horizon=HORIZON)
    n = bank.submit.shape[1]
    scores = rng.choice(np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32), (n_seq, HORIZON, n))
    outs, metrics = jax.device_get(run(params, jnp.arange(n_seq), jnp.asarray(scores)))
    for b, (jobs, cap) in enumerate(episodes):
        compare_with_reference(jobs, cap, outs, metrics, scores, defer_negative, b)
    assert metrics["backlog"].sum() > 0 and metrics["expired"].sum() > 0 and metrics["violation"].sum() > 0


@pytest.mark.parametrize("name", ["fifo", "sjf", "tetris"])
def test_heuristics_equal_their_plain_python_versions(name):
    """Job for job: the jobs each heuristic starts at each step, and the metrics."""
    rng = np.random.default_rng(11)
    episodes = [random_episode(rng) for _ in range(12)]
    env = DeferrableEnv(DeferrableConfig(SLOTS, MAX_CAP))
    params = env.make_params(bank_of(episodes), horizon=HORIZON)
    policy = make_heuristic(env, name)

    @jax.jit
    def run(episode):
        def body(state, _):
            obs = env.observe(state, params)
            action = policy(None, obs, None)
            _, nxt, reward, _, _, info = env.step_env(jax.random.key(0), state, action, params)
            return nxt, (info["started_ids"], reward)

        last, outs = jax.lax.scan(body, env.start_episode(episode, params), None, HORIZON)
        return outs, env.metrics(last, params)

    for b, (jobs, cap) in enumerate(episodes):
        (started_ids, rewards), metrics = jax.device_get(run(b))
        ref = RefDeferrable(jobs, cap, HORIZON, SLOTS)
        for t in range(HORIZON):
            reward = ref.step(heuristic_scores(ref, name))
            started = {j for j in ref.start if ref.start[j] == t}
            assert set(started_ids[t][started_ids[t] >= 0].tolist()) == started, (name, b, t)
            np.testing.assert_allclose(rewards[t], reward, rtol=1e-6)
        assert metrics["started"] == ref.metrics()["started"]


# ---- hand cases ---------------------------------------------------------------------------------------
def hand_env(jobs: list[tuple], cap: list[int], defer_negative=False):
    """Jobs as (cores, duration, earliest, latest, submit)."""
    names = ("cores", "duration", "earliest", "latest", "submit")
    cols = {k: np.array(v) for k, v in zip(names, zip(*jobs, strict=True), strict=True)}
    bank = make_bank([cols], np.array([cap]), source="hand")
    env = DeferrableEnv(DeferrableConfig(8, max(cap), defer_negative))
    params = env.make_params(bank)
    return env, params, env.start_episode(0, params)


def step(env, params, state, scores):
    action = jnp.asarray(scores, jnp.float32)[jnp.maximum(state.p_id, 0)]  # each slot's job's score
    return env.step_env(jax.random.key(0), state, action, params)


def started_ids(state):
    return sorted(int(j) for j in state.r_id if j >= 0)


def test_take_by_score_is_the_longest_fitting_prefix():
    # capacity 5; jobs 0 (2 cores), 1 (4 cores), 2 (1 core), all startable at 0, duration 3
    jobs = [(2, 3, 0, 2, 0), (4, 3, 0, 2, 0), (1, 3, 0, 2, 0)]
    env, params, s0 = hand_env(jobs, [5, 5, 5])
    # order 1 (0.9), 2 (0.5), 0 (0.1): 4 + 1 fit, 2 more do not -> jobs 1 and 2
    _, s, r, *_ = step(env, params, s0, [0.1, 0.9, 0.5])
    assert started_ids(s) == [1, 2] and float(r) == (4 + 1) * 3
    # order 1, 0, 2: 4 fits, 4 + 2 does not and stops the take; job 2 would fit but is not reached
    _, s, r, *_ = step(env, params, s0, [0.5, 0.9, 0.1])
    assert started_ids(s) == [1] and float(r) == 4 * 3
    # ties go to the earlier job: all 0 -> order 0, 1, 2: 2 fits, 2 + 4 does not
    _, s, *_ = step(env, params, s0, [0.0, 0.0, 0.0])
    assert started_ids(s) == [0]
    # defer_negative: job 1's score < 0 takes it out of the list -> 0 and 2 start
    env_d, params_d, s0_d = hand_env(jobs, [5, 5, 5], defer_negative=True)
    _, s, *_ = step(env_d, params_d, s0_d, [0.5, -0.9, 0.1])
    assert started_ids(s) == [0, 2]


def test_delay_is_paid_and_a_job_expires_at_l_plus_1():
    # job 0: e = 1, l = 2 on a cluster with no room until t = 3; job 1: e = 0, started at t = 2
    jobs = [(1, 2, 1, 2, 0), (2, 2, 0, 4, 0)]
    env, params, s = hand_env(jobs, [0, 0, 2, 3, 3])
    for _ in range(2):
        _, s, r, *_ = step(env, params, s, [1.0, 0.0])
        assert float(r) == 0.0
    assert sorted(int(j) for j in s.p_id if j >= 0) == [0, 1]  # t = 2: job 0 still pending (l = 2)
    _, s, r, *_ = step(env, params, s, [0.0, 1.0])  # job 1 (2 cores) takes C_2 = 2; job 0 does not fit
    assert float(r) == 2 * 2 - 2.0 * 2  # c·d − ω1 · (2 − 0)
    assert int(s.t) == 3 and int(s.expired) == 1 and 0 not in s.p_id.tolist()


def test_pending_features_by_hand():
    """`obs.pending_features` at t = 1: present, candidate, cores, duration, e − t, l − t per slot (job 0:
    e = 0, l = 3; job 1: e = 2, l = 4; the other slots empty, all zeros)."""
    jobs = [(2, 3, 0, 3, 0), (1, 5, 2, 4, 1)]
    env, params, s = hand_env(jobs, [1, 1, 4, 4, 4])
    obs, s, *_ = step(env, params, s, [-1.0, -1.0])  # job 0 (2 cores) does not fit C_0 = 1
    got = np.asarray(obs.pending_features)
    slot = {int(j): i for i, j in enumerate(np.asarray(obs.p_id)) if j >= 0}
    np.testing.assert_array_equal(got[slot[0]], [1, 1, 2, 3, -1, 2])
    np.testing.assert_array_equal(got[slot[1]], [1, 0, 1, 5, 1, 3])
    assert not np.delete(got, list(slot.values()), axis=0).any()


def test_day_phase_by_hand():
    """`obs.day_phase` = (t mod day) / day: with a day of 4 steps, t = 0..5 reads 0, ¼, ½, ¾, 0, ¼."""
    env, params, _ = hand_env([(1, 1, 0, 9, 0)], [2] * 8)
    params = env.make_params(params.bank, day=4)
    s = env.start_episode(0, params)
    phases = []
    for _ in range(6):
        phases.append(float(env.observe(s, params).day_phase))
        _, s, *_ = step(env, params, s, [0.0])
    assert phases == [0.0, 0.25, 0.5, 0.75, 0.0, 0.25]


def test_a_capacity_drop_under_the_running_load_is_a_violation():
    # a 4-core job runs during 0..2; the capacity drops to 1 at t = 1 -> v_1 = 3, and nothing else starts
    jobs = [(4, 3, 0, 0, 0), (1, 1, 1, 1, 0)]
    env, params, s = hand_env(jobs, [5, 1, 5])
    _, s, r, *_ = step(env, params, s, [1.0, 1.0])
    assert float(r) == 12.0
    _, s, r, *_ = step(env, params, s, [1.0, 1.0])
    assert float(r) == -10.0 * 3 and int(s.started) == 1
    m = env.metrics(s, params)
    assert float(m["violation"]) == 3 and float(m["violation_share"]) == 0.5 and float(m["expired"]) == 1


# ---- invariants ---------------------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_invariants(seed):
    """A job starts at most once, never before e or after l, never while it does not fit C_t."""
    rng = np.random.default_rng(seed)
    episodes = [random_episode(rng) for _ in range(4)]
    bank = bank_of(episodes)
    env, run = rollout_program(False)
    params = env.make_params(bank, horizon=HORIZON)
    scores = rng.normal(size=(4, HORIZON, bank.submit.shape[1])).astype(np.float32)
    outs, _ = jax.device_get(run(params, jnp.arange(4), jnp.asarray(scores)))
    for b, (jobs, cap) in enumerate(episodes):
        start = {}
        for t in range(HORIZON):
            ids = outs["started"][b, t]
            for j in ids[ids >= 0].tolist():
                assert j not in start  # at most once
                start[j] = t
                assert jobs["earliest"][j] <= t <= jobs["latest"][j]
                assert j in outs["p_id"][b, t] and outs["candidate"][b, t][list(outs["p_id"][b, t]).index(j)]
            started_cores = sum(jobs["cores"][j] for j in ids[ids >= 0])
            if started_cores:
                assert outs["load"][b, t] + started_cores <= cap[t]
        assert len(start) == outs["started"][b].__ge__(0).sum()


# ---- errors -------------------------------------------------------------------------------------------
def test_bad_input_names_the_field():
    job = {"cores": [1], "duration": [1], "earliest": [2], "latest": [1], "submit": [0]}
    with pytest.raises(ValueError, match=r"job 0 latest must be >= earliest \(l < e\)"):
        make_bank([job], np.array([[4, 4]]))
    with pytest.raises(ValueError, match="job 0 cores must be >= 1, got -2"):
        make_bank([job | {"cores": [-2], "latest": [3]}], np.array([[4, 4]]))
    bank = make_bank([job | {"latest": [3]}], np.array([[4, 4]]))
    env = DeferrableEnv(DeferrableConfig(4, 4))
    with pytest.raises(ValueError, match=r"horizon must be in 1..2 \(the capacity curve's length\), got 3"):
        env.make_params(bank, horizon=3)
    with pytest.raises(ValueError, match="running_slots .2. must be >= the largest capacity"):
        DeferrableEnv(DeferrableConfig(4, 2)).make_params(bank)
    env.make_params(
        make_bank([job | {"cores": [4], "latest": [3]}], np.array([[4, 4]]))
    )  # as wide as C: fits
    wide = make_bank([job | {"cores": [5], "latest": [3]}], np.array([[4, 4]]))
    with pytest.raises(ValueError, match=r"job 0 cores \(5\) exceed the episode's largest capacity \(4\)"):
        env.make_params(wide)
    with pytest.raises(ValueError, match="workload.preset must be one of default, core1"):
        preset("core4")
    with pytest.raises(ValueError, match="workload.core_probs must be 4 probabilities"):
        preset("default", core_probs=(0.5, 0.5))
    with pytest.raises(ValueError, match="pending_slots must be >= 1"):
        DeferrableConfig(pending_slots=0)


def test_generator_is_seeded_and_realtime_shares_the_draws():
    cfg = preset("default")
    a, b = generate_bank(cfg, 3, seed=4), generate_bank(cfg, 3, seed=4)
    jax.tree.map(np.testing.assert_array_equal, a, b)
    rt = generate_bank(preset("default", realtime=True), 3, seed=4)
    np.testing.assert_array_equal(rt.cores, a.cores)
    np.testing.assert_array_equal(rt.capacity, a.capacity)
    real = np.asarray(a.submit) < 2**30
    np.testing.assert_array_equal(np.asarray(rt.earliest)[real], np.asarray(rt.submit)[real])
    np.testing.assert_array_equal(np.asarray(rt.latest)[real], np.asarray(rt.submit)[real])
    assert (np.asarray(a.latest)[real] < cfg.horizon).all()  # every window inside the episode
    assert (np.asarray(a.latest) - np.asarray(a.earliest))[real].max() > 0


def test_registered_presets_build():
    env, params = jaxsched.make("osdec-quick")
    assert env.config.pending_slots == 32 and int(params.horizon) == 24


def test_default_preset_keeps_the_papers_orderings():
    """The calibration's targets that hold today (docs/osdec.md): utilisation FIFO > SJF, real time below
    deferrable for each heuristic, no job ever waiting for a pending slot; on episodes other than the
    documented run's. (Tetris > FIFO does not hold robustly yet: 1.005 there, 0.997 here.)"""
    keys = jax.random.split(jax.random.key(5), 32)
    util = {}
    for name in ("osdec", "osdec-realtime"):
        env, params = jaxsched.make(name, episodes=32, seed=5)
        policies = {n: make_heuristic(env, n) for n in ("fifo", "sjf", "tetris")}
        out = jax.device_get(evaluate_policies(env, params, policies, keys))
        util[name] = {n: float(np.mean(m["utilization"])) for n, m in out.items()}
        assert max(float(np.max(m["backlog"])) for m in out.values()) == 0
    d, rt = util["osdec"], util["osdec-realtime"]
    assert d["fifo"] > d["sjf"]
    assert all(rt[n] < d[n] for n in d)

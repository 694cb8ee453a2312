"""The idle-slot DAG env (`envs/dag/env.py`) against its contract: a differential test with the plain-Python
reference (`tests/reference/dag.py`) over random valid (and some invalid) action sequences, the paper's
hand cases (Fig. 1, Fig. 3's width, the return), compile-once and vmap = loop."""

from __future__ import annotations

import dataclasses
import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.dag import RefDAGEnv, random_valid_action
from reference.dag_counts import unpacked_counts

from jaxsched.core.episode import run_episode, stateless
from jaxsched.envs.dag.env import DAGEnv, _rank_within
from jaxsched.envs.dag.params import DAGConfig
from jaxsched.envs.dag.types import StageCounts
from jaxsched.envs.dag.waves import interval_map
from jaxsched.workloads.dag_bank import DAGTemplates, make_bank, template_features

K, J, S, G = 3, 3, 5, 4  # one static shape for every differential sequence: one compile
N_TEMPLATES, N_JOBS = 6, 6
STATE_KEYS = ("dispatched", "done", "moving", "delayed", "hold_until", "selected", "slot_job", "jct")
COUNT_KEYS = ("dispatched", "done", "moving", "delayed", "selected")  # unpacked from `state.counts`
EX_KEYS = ("ex_state", "ex_until", "ex_job", "ex_stage", "ex_warm")


def random_templates(rng: np.random.Generator, n: int, max_stages: int, max_tasks=4, dur=(1, 3000)):
    dags = []
    for i in range(n):
        m = int(rng.integers(1, max_stages + 1))
        adj = np.triu(rng.random((m, m)) < 0.5, 1)
        tasks = rng.integers(1, max_tasks + 1, m)
        # durations on a coarse grid half of the time, so completions often coincide; a few tiny ones,
        # whose idle slot r·L//g rounds to 0 (the contract makes it 1 ms)
        u = rng.random()
        d = (
            rng.integers(1, 4, m) * 500
            if u < 0.45
            else rng.integers(1, 3, m)
            if u < 0.55
            else rng.integers(*dur, m)
        )
        dags.append(dict(name=f"r{i}", adj=adj, n_tasks=tasks, duration=d))
    return DAGTemplates.from_lists(dags, max_stages=max_stages)


def random_episode(rng: np.random.Generator, n_jobs: int, n_templates: int, mean_gap: float):
    gaps = rng.exponential(mean_gap, n_jobs) * (rng.random(n_jobs) < 0.8)  # some simultaneous arrivals
    arrival = np.floor(np.cumsum(gaps)).astype(np.int64)
    return rng.integers(0, n_templates, n_jobs), arrival - arrival[0]


WAVE_KEYS, WAVE_POINTS, WAVE_D = (1, 2, 3, 4, 6), (1, 2, 4), 4  # n = 3 falls between the points 2 and 4


@dataclasses.dataclass
class Waves:  # the fields of workloads.tpch.WaveTable that the env reads
    values: np.ndarray
    count: np.ndarray
    present: np.ndarray
    keys: np.ndarray


def random_waves(rng: np.random.Generator, tm: DAGTemplates) -> Waves:
    """A wave table for `tm`: per (template, stage, key) a first wave (present or not, sometimes empty after
    decima's cleaning), a rest wave and fresh durations, some empty; values on a coarse grid half of the
    time, so completions coincide."""
    t, k = tm.n_stages.shape[0], len(WAVE_KEYS)
    present = rng.random((t, S, k)) < 0.7
    present[:, :, 0] |= ~present.any(axis=2)  # every stage has a first-wave key
    count = rng.integers(0, WAVE_D + 1, (t, S, k, 3)) * present[..., None]
    count[..., 0] = np.where(rng.random((t, S, k)) < 0.85, np.maximum(count[..., 0], 1), 0) * present
    coarse = rng.integers(1, 5, (t, S, k, 3, WAVE_D)) * 400
    values = np.where(rng.random((t, S, k, 3, 1)) < 0.5, coarse, rng.integers(1, 2500, coarse.shape))
    values = values * (np.arange(WAVE_D) < count[..., None])
    return Waves(values.astype(np.int32), count.astype(np.int32), present, np.array(WAVE_KEYS, np.int32))


def test_random_baseline_is_valid_and_uniform_over_each_head():
    """The random baseline (one uniform draw per head) always picks a valid action, and each head is uniform
    over its valid range: the runnable stages, the limits from `limit_min` to k, and r in 0..g where the
    stage may be delayed (0 elsewhere). 6,000 draws on a state with several runnable stages, frequencies
    within 5 standard deviations of uniform."""
    from jaxsched.policies.dag import make_heuristic

    env = DAGEnv(DAGConfig(n_executors=8, max_slots=J, max_stages=S, idle_levels=G))
    rng = np.random.default_rng(5)
    tm = random_templates(rng, N_TEMPLATES, S)
    template, arrival = random_episode(rng, N_JOBS, N_TEMPLATES, 1.0)
    arrival = np.zeros_like(arrival)  # every job at t = 0: J jobs' roots runnable
    params = env.make_params(make_bank(tm, template[None], arrival[None]))
    obs, state = jax.jit(env.reset_env)(jax.random.PRNGKey(0), params)
    policy = make_heuristic(env, "random")
    keys = jax.random.split(jax.random.PRNGKey(1), 6000)
    acts = np.asarray(jax.jit(jax.vmap(lambda k: policy(None, obs, k)))(keys))
    valid = jax.jit(jax.vmap(lambda a: env.action_valid(state, params, a)))(jnp.asarray(acts))
    assert bool(np.all(np.asarray(valid)))

    def assert_uniform(values, support):
        counts = np.array([(values == v).sum() for v in support])
        assert counts.sum() == len(values), "a value outside the support"
        p = 1.0 / len(support)
        sd = np.sqrt(len(values) * p * (1 - p))
        assert np.all(np.abs(counts - len(values) * p) < 5 * sd), counts

    runnable = np.flatnonzero(np.asarray(obs.stage_mask))
    assert len(runnable) >= 3
    assert_uniform(acts[:, 0], runnable)
    k_exec = env.config.n_executors
    lo = int(np.asarray(obs.limit_min)[runnable[0] // S])
    first = acts[:, 0] == runnable[0]
    assert_uniform(acts[first, 1] + 1, range(lo, k_exec + 1))
    may_delay = np.asarray(obs.idle_ok)[acts[:, 0]]
    assert may_delay.any()
    assert_uniform(acts[may_delay, 2], range(G + 1))
    assert np.all(acts[~may_delay, 2] == 0)


@functools.cache
def env_and_step(task_waves: bool = False):
    env = DAGEnv(DAGConfig(n_executors=K, max_slots=J, max_stages=S, idle_levels=G, task_waves=task_waves))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(state, action, params):
        return env.step_env(jax.random.PRNGKey(0), state, action, params)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def reset(params):
        return env.reset_env(jax.random.PRNGKey(0), params)

    return env, reset, step


@pytest.mark.parametrize("k", [3, 50, 70])
def test_rank_within_counts_the_group_members_before_each_executor(k):
    """The bitset rank equals the plain pairwise count, across word boundaries (k = 50, 70) and with
    the `second` executors ranked after the others."""
    rng = np.random.default_rng(k)
    J_, S_ = 4, 3
    for _ in range(20):
        flags = rng.random(k) < 0.6
        slot, stage = rng.integers(0, J_, k), rng.integers(0, S_, k)
        second = rng.random(k) < 0.3
        want = np.zeros(k, int)
        for i in range(k):
            for j in range(k):
                same = flags[j] and slot[j] == slot[i] and stage[j] == stage[i]
                before = (second[j], j) < (second[i], i)
                want[i] += same and before
        got = np.asarray(_rank_within(*(jnp.asarray(x) for x in (flags, slot, stage, second)), (J_, S_)))
        np.testing.assert_array_equal(got[flags], want[flags])


def test_nth_set_is_the_flat_cumsum_search():
    """The random baseline's bit-counting search picks the same stage as argmax(cumsum(mask) > n), also for
    an empty mask (index 0) and n past the last True."""
    from jaxsched.policies.dag import _nth_set

    rng = np.random.default_rng(0)
    for p in (0.0, 0.05, 0.5, 1.0):
        mask = rng.random((J * 3, S)) < p
        for n in range(0, int(mask.sum()) + 2):
            want = int(np.argmax(np.cumsum(mask.ravel()) > n))
            assert int(_nth_set(jnp.asarray(mask), jnp.int32(n))) == want, (p, n)


def ref_env(tm: DAGTemplates, template, arrival, **kw) -> RefDAGEnv:
    return RefDAGEnv(
        n_executors=K, max_slots=J, max_stages=S, idle_levels=G, n_stages=tm.n_stages, parents=tm.parents,
        n_tasks=tm.n_tasks, duration=tm.duration, template=template, arrival=arrival, **kw,
    )  # fmt: skip


OBS_PROPERTIES = ("stage_valid", "not_started", "remaining", "on_stage", "delayed", "held")


@jax.jit
def obs_properties(obs):
    """The observation's per-stage properties, unpacked as a policy reads them — alone and under two
    leading batch axes (the same values) — in one compiled call, not hundreds of eager ones per step."""
    stacked = jax.tree.map(lambda x: x[None, None], obs)
    alone = {k: getattr(obs, k) for k in OBS_PROPERTIES}
    return alone, {k: getattr(stacked, k)[0, 0] for k in OBS_PROPERTIES}


def assert_same(env, n_tasks, n_stages, obs, state, snap, where: str):
    assert int(state.t) == snap["t"], where
    occupied = np.asarray(state.slot_job)[:, None] >= 0
    counts = unpacked_counts(env, state, n_tasks)
    for key in STATE_KEYS + EX_KEYS:
        value = counts[key] if key in COUNT_KEYS else np.asarray(getattr(state, key))
        if value.ndim == 2 and value.shape[0] == J:  # per-stage: a freed slot keeps stale values (masked)
            value = np.where(occupied, value, 0)
        np.testing.assert_array_equal(value, snap[key], err_msg=f"{where}: {key}")
    # the observation's per-stage properties, unpacked from its raw fields, against the reference's counters
    tmpl = np.asarray(state.slot_tmpl)
    props, batched = jax.device_get(obs_properties(obs))
    valid = props["stage_valid"]
    exists = np.arange(S)[None, :] < np.asarray(n_stages)[tmpl][:, None]
    np.testing.assert_array_equal(valid, occupied & exists, f"{where}: obs.stage_valid")
    left, running = np.asarray(n_tasks)[tmpl] - snap["dispatched"], snap["dispatched"] - snap["done"]
    want = {"not_started": left, "remaining": np.maximum(left - snap["moving"], 0), "on_stage": running,
            "delayed": snap["delayed"], "held": snap["hold_until"] > snap["t"]}  # fmt: skip
    for key, value in want.items():
        np.testing.assert_array_equal(props[key], np.where(valid, value, 0), f"{where}: obs.{key}")
        np.testing.assert_array_equal(batched[key], props[key], f"{where}: batched {key}")
    np.testing.assert_array_equal(np.asarray(obs.stage_mask), snap["stage_mask"], err_msg=f"{where}: mask")
    np.testing.assert_array_equal(np.asarray(obs.idle_ok), snap["idle_ok"], err_msg=f"{where}: idle_ok")
    np.testing.assert_array_equal(np.asarray(obs.bound), snap["bound"], err_msg=f"{where}: bound")
    for key, name in (("next_arr", "n_arrived"), ("next_admit", "n_admitted"), ("n_finished", "n_finished")):
        assert int(getattr(state, key)) == snap[name], f"{where}: {name}"
    assert int(state.invalid) == snap["invalid"], where


def run_sequence(seed: int, steps: int = 200, task_waves: bool = False):
    """One random episode driven by both simulators with the same actions; returns what it covered.
    With `task_waves`, task durations are drawn from a random wave table (decima-sim's sampling)."""
    env, reset, step = env_and_step(task_waves)
    rng = np.random.default_rng(seed)
    tm = random_templates(rng, N_TEMPLATES, S)
    waves = random_waves(rng, tm) if task_waves else None
    template, arrival = random_episode(rng, N_JOBS, N_TEMPLATES, mean_gap=float(rng.choice([300, 2000])))
    knobs = dict(
        moving_delay=int(rng.choice([0, 0, 250, 700])),
        warmup_delay=int(rng.choice([0, 300])),
        reward_scale=float(rng.choice([1.0, 100.0])),
        max_time=int(rng.choice([2**31 - 1, 2**31 - 1, 4000])),
    )
    bank = make_bank(tm, template[None], arrival[None])
    wave_kw = dict(waves=waves, wave_points=WAVE_POINTS) if task_waves else {}
    params = env.make_params(bank, **knobs, **wave_kw)
    obs, state = reset(params)
    if task_waves:
        wave_kw = dict(waves=waves, data_points=WAVE_POINTS, wave_seed=int(state.seed))
    ref = ref_env(tm, template, arrival, **knobs, **wave_kw)
    snap = ref.reset()
    assert_same(env, tm.n_tasks, tm.n_stages, obs, state, snap, f"seed {seed} reset")
    covered = {"idle": 0, "moving": 0, "invalid": 0, "truncated": 0}
    for i in range(steps):
        if rng.random() < 0.1:  # an invalid action now and then: nothing but the counter changes
            a = (int(rng.integers(0, J * S)), int(rng.integers(0, K)), int(rng.integers(0, G + 1)))
        else:
            a = random_valid_action(snap, ref, rng)
        snap, r_ref, term_ref, trunc_ref = ref.step(*a)
        obs, state, r, term, trunc, info = step(state, jnp.asarray(a, jnp.int32), params)
        where = f"seed {seed} step {i} action {a}"
        assert_same(env, tm.n_tasks, tm.n_stages, obs, state, snap, where)
        np.testing.assert_allclose(float(r), r_ref, rtol=1e-5, atol=1e-5, err_msg=where)
        assert (bool(term), bool(trunc)) == (term_ref, trunc_ref), where
        covered["idle"] += a[2] > 0 and not bool(info["invalid"])
        covered["moving"] += int((np.asarray(state.ex_state) == 2).any())
        covered["invalid"] += bool(info["invalid"])
        if term_ref or trunc_ref:
            covered["truncated"] += trunc_ref
            break
    else:
        pytest.fail(f"seed {seed}: the episode did not end in {steps} steps")
    got = jax.tree.map(float, env.metrics(state, params))
    for key, want in ref.metrics().items():
        if key != "return":
            assert got[key] == pytest.approx(want, rel=1e-5, abs=1e-5), f"seed {seed}: {key}"
    assert float(state.ret) == pytest.approx(ref.metrics()["return"], rel=1e-4, abs=1e-4)
    covered["waited"] = ref.metrics()["waited_for_slot"]
    return covered


def test_differential_random_sequences():
    """≥ 100 random episodes, every snapshot field, reward and flag equal to the reference's."""
    total = {"idle": 0, "moving": 0, "invalid": 0, "truncated": 0, "waited": 0}
    for seed in range(120):
        for key, value in run_sequence(seed).items():
            total[key] += value
    # the sweep exercised what it should
    assert total["idle"] > 100 and total["moving"] > 50 and total["invalid"] > 50 and total["truncated"] > 5
    assert total["waited"] > 20, total  # jobs that found every slot taken (`waited_for_slot`)


def test_differential_task_waves():
    """decima-sim's per-task sampling (`task_waves`): random wave tables, the same reference with its
    plain-Python draws; every snapshot field (so every task's end), reward and flag equal."""
    total = {"idle": 0, "moving": 0, "invalid": 0, "truncated": 0, "waited": 0}
    for seed in range(40):
        for key, value in run_sequence(1000 + seed, steps=400, task_waves=True).items():
            total[key] += value
    assert total["idle"] > 30 and total["moving"] > 20 and total["invalid"] > 20


def test_a_stage_is_chosen_once_per_round():
    """Decima's `node_selected`: a stage chosen with a limit that leaves executors idle is not runnable
    again until the next trigger; choosing it again is invalid (nothing changes but the counter), while the
    other root stays valid."""
    roots = np.zeros((2, 2), bool)  # two independent stages of one job
    tm = DAGTemplates.from_lists([dict(name="two", adj=roots, n_tasks=[5, 5], duration=[1000, 1000])])
    env = DAGEnv(DAGConfig(n_executors=3, max_slots=1, max_stages=2, idle_levels=4))
    params = env.make_params(make_bank(tm, [[0]], [[0]]))
    step = jax.jit(lambda st, a: env.step_env(jax.random.PRNGKey(0), st, jnp.asarray(a, jnp.int32), params))
    obs, state = env.reset_env(jax.random.PRNGKey(0), params)
    obs, state, *_, info = step(state, (0, 0, 0))  # stage 0 with limit 1: one executor, two stay idle
    assert not bool(info["invalid"]) and int(obs.n_idle) == 2 and int(state.t) == 0
    assert obs.stage_mask.tolist() == [False, True]
    obs, again, *_, info = step(state, (0, 1, 0))  # stage 0 again, a larger limit: selected this round
    assert bool(info["invalid"]) and int(again.invalid) == 1 and int(obs.n_idle) == 2
    _, _, *_, info = step(state, (1, 1, 0))
    assert not bool(info["invalid"])


# ---- the paper's hand cases ----------------------------------------------------------------------------
def fig1_params(reward_scale=1.0, **knobs):
    one = np.zeros((1, 1), bool)
    tm = DAGTemplates.from_lists(
        [
            dict(name="job1", adj=one, n_tasks=[1], duration=[20_000]),
            dict(name="job2", adj=one, n_tasks=[1], duration=[4_000]),
        ]
    )
    env = DAGEnv(DAGConfig(n_executors=1, max_slots=2, max_stages=1, idle_levels=10))
    return env, env.make_params(make_bank(tm, [[0, 1]], [[0, 2_000]]), reward_scale=reward_scale, **knobs)


@pytest.mark.parametrize(
    "actions, jcts",
    [
        ([(0, 0, 0), (1, 0, 0)], [20_000, 22_000]),  # no idle: avg 21 s
        ([(0, 0, 1), (1, 0, 0), (0, 0, 0)], [26_000, 4_000]),  # a 2 s slot before job 1: avg 15 s
    ],
)
@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_fig1(actions, jcts, scale):
    env, params = fig1_params(scale)
    obs, state = env.reset_env(jax.random.PRNGKey(0), params)
    total = 0.0
    for a in actions:
        obs, state, r, term, _, _ = env.step_env(jax.random.PRNGKey(1), state, jnp.asarray(a), params)
        total += float(r)
    assert bool(term) and np.asarray(state.jct).tolist() == jcts
    m = env.metrics(state, params)
    assert float(m["avg_jct"]) == pytest.approx(sum(jcts) / 2000.0)
    assert total == pytest.approx(-sum(jcts) / 1000.0 / scale)  # the return is −Σ JCT / scale
    assert float(m["idle_per_delayed"]) == (2.0 if len(actions) == 3 else 0.0)


@pytest.mark.parametrize("max_time, arrived, reward", [(2_000, 1, -2.0), (2_001, 2, -2.002)])
def test_truncation_at_an_event_time_processes_nothing_there(max_time, arrived, reward):
    """Fig. 1's jobs cut at job 2's arrival: an event at exactly `max_time` is not processed (job 2 has not
    arrived, one job unfinished), one before it is (no executor idles, so the step runs on to the cut);
    the interval up to `max_time` accrues either way."""
    env, params = fig1_params(max_time=max_time)
    _, state = env.reset_env(jax.random.PRNGKey(0), params)
    _, state, r, term, trunc, _ = env.step_env(jax.random.PRNGKey(1), state, jnp.asarray((0, 0, 0)), params)
    assert bool(trunc) and not bool(term) and int(state.t) == max_time
    assert int(state.next_arr) == arrived and int(env.metrics(state, params)["unfinished"]) == arrived
    assert float(r) == pytest.approx(reward)


def wave_chain_jct(first, rest, fresh, warmup=0) -> float:
    """JCT (s) of one job, stage 0 (3 tasks) -> stage 1 (1 task), on one executor with `task_waves`: each list
    has at most one value, the only key is 5, so the draws cannot matter."""
    tm = DAGTemplates.from_lists(
        [dict(name="chain", adj=[[0, 1], [0, 0]], n_tasks=[3, 1], duration=[1000, 1000])], max_stages=2
    )
    lists = (first, rest, fresh)
    values = np.zeros((1, 2, 1, 3, 1), np.int32)
    count = np.zeros((1, 2, 1, 3), np.int32)
    for kind, v in enumerate(lists):
        values[0, :, 0, kind, 0] = v or 0
        count[0, :, 0, kind] = v is not None
    waves = Waves(values, count, np.ones((1, 2, 1), bool), np.array([5], np.int32))
    env = DAGEnv(DAGConfig(n_executors=1, max_slots=1, max_stages=2, idle_levels=2, task_waves=True))
    bank = make_bank(tm, np.zeros((1, 1), np.int32), np.zeros((1, 1), np.int64))
    params = env.make_params(bank, warmup_delay=warmup, waves=waves, wave_points=(5,))
    obs, state = env.reset_env(jax.random.PRNGKey(0), params)
    for stage in (0, 1):  # FIFO: each stage when it becomes runnable, limit 1, no idle slot
        assert bool(obs.stage_mask[stage])
        obs, state, *_ = env.step_env(jax.random.PRNGKey(0), state, jnp.array([stage, 0, 0]), params)
    assert int(state.n_finished) == 1
    return int(state.jct[0]) / 1000.0


@pytest.mark.parametrize(
    "lists, warmup, jct",
    [
        # fresh to the job: the fresh sample; then the rest wave twice; stage 1: the first wave
        ((100, 30, 500), 0, 0.5 + 0.03 + 0.03 + 0.1),
        # no fresh samples: the first wave plus the warm-up
        ((100, 30, None), 7, 0.107 + 0.03 + 0.03 + 0.1),
        # no rest samples: the first wave for the continuations too
        ((100, None, 500), 0, 0.5 + 0.1 + 0.1 + 0.1),
        # no first wave: the fresh samples stand in (decima's fallback)
        ((None, 30, 500), 0, 0.5 + 0.03 + 0.03 + 0.5),
    ],
)
def test_task_waves_by_hand(lists, warmup, jct):
    assert wave_chain_jct(*lists, warmup=warmup) == pytest.approx(jct)


def test_interval_map_is_decimas():
    """decima-sim's `get_executor_interval_map` docstring: 0-5 -> (5, 5), 6-9 -> (5, 10), 10 -> (10, 10),
    ..., 99 -> (80, 100), 100 -> (100, 100); beyond the last point, (100, 100)."""
    lo, hi = interval_map(120)
    want = {0: (5, 5), 5: (5, 5), 6: (5, 10), 9: (5, 10), 10: (10, 10), 11: (10, 20), 45: (40, 50),
            99: (80, 100), 100: (100, 100), 120: (100, 100)}  # fmt: skip
    assert {n: (int(lo[n]), int(hi[n])) for n in want} == want


def test_task_waves_bad_input():
    env = DAGEnv(DAGConfig(n_executors=2, max_slots=2, max_stages=2, task_waves=True))
    tm = DAGTemplates.from_lists([dict(name="a", adj=[[0]], n_tasks=[1], duration=[5])], max_stages=2)
    bank = make_bank(tm, np.zeros((1, 1), np.int32), np.zeros((1, 1), np.int64))
    with pytest.raises(ValueError, match="task_waves needs the wave samples"):
        env.make_params(bank)
    waves = Waves(np.ones((1, 1, 1, 3, 1), np.int32), np.ones((1, 1, 1, 3), np.int32),
                  np.ones((1, 1, 1), bool), np.array([7], np.int32))  # fmt: skip
    with pytest.raises(ValueError, match="waves.keys: lacks the data point 5"):
        env.make_params(bank, waves=waves)
    with pytest.raises(ValueError, match="dag.task_waves is off"):
        DAGEnv(DAGConfig(n_executors=2, max_slots=2, max_stages=2)).make_params(bank, waves=waves)


@pytest.mark.parametrize(
    "knob, value, words",
    [
        ("moving_delay", -1, "dag.moving_delay must be in [0, 1e8) ms"),
        ("warmup_delay", 10**8, "dag.warmup_delay must be in [0, 1e8) ms"),
        ("reward_scale", 0.0, "dag.reward_scale must be > 0"),
        ("reward_scale", float("nan"), "dag.reward_scale must be > 0"),
        ("max_time", 0, "dag.max_time must be in (0, 2**31) ms"),
        ("max_time", 2**31, "dag.max_time must be in (0, 2**31) ms"),
    ],
)
def test_bad_knobs_name_the_field(knob, value, words):
    env = DAGEnv(DAGConfig(n_executors=2, max_slots=2, max_stages=S))
    env.make_params(small_bank(), **{knob: 1})  # the smallest valid value of each
    with pytest.raises(ValueError, match=re.escape(words)):
        env.make_params(small_bank(), **{knob: value})


def test_a_bank_one_stage_wider_than_the_env_is_refused():
    job = dict(name="w", adj=np.eye(3, k=1), n_tasks=[1, 1, 1], duration=[5, 5, 5])  # a 3-stage chain
    bank = make_bank(DAGTemplates.from_lists([job]), np.zeros((1, 1), np.int32), np.zeros((1, 1), np.int64))
    DAGEnv(DAGConfig(n_executors=2, max_slots=2, max_stages=3)).make_params(bank)
    with pytest.raises(
        ValueError, match=re.escape("up to 3 stages (padded to 3), wider than dag.max_stages = 2")
    ):
        DAGEnv(DAGConfig(n_executors=2, max_slots=2, max_stages=2)).make_params(bank)


def test_stage_counts_layout():
    """The packed per-stage word: fields round-trip through packed increments (negative parts included),
    flags are separate bits, and a bank with wider stages than the fields hold is refused, naming it."""
    lay = StageCounts(50)
    assert (lay.k_bits, lay.task_bits, lay.max_tasks) == (6, 16, 65535)
    c = jnp.int32(lay.max_tasks) | lay.flag("touched")  # every task left
    c = c + lay.pack(left=-7, running=7) + lay.pack(moving=50)
    c = c + lay.pack(left=-1, running=0, moving=-1) + lay.pack(running=-3)  # an arrival takes one; 3 finish
    c = c | lay.flag("selected")
    assert (int(lay.left(c)), int(lay.running(c)), int(lay.moving(c))) == (lay.max_tasks - 8, 4, 49)
    assert [bool(lay.has(c, f)) for f in ("touched", "delayed", "selected")] == [True, False, True]
    assert int(c) >= 0  # bit 31 never used

    def bank_of(n_tasks):
        job = dict(name="w", adj=[[0]], n_tasks=[n_tasks], duration=[5])
        tm = DAGTemplates.from_lists([job], max_stages=2)
        return make_bank(tm, np.zeros((1, 1), np.int32), np.zeros((1, 1), np.int64))

    env = DAGEnv(DAGConfig(n_executors=50, max_slots=2, max_stages=2))
    env.make_params(bank_of(lay.max_tasks))  # the widest stage the fields hold
    with pytest.raises(ValueError, match=r"bank.n_tasks: stages of up to 65536 tasks .*dag.n_executors = 50"):
        env.make_params(bank_of(lay.max_tasks + 1))
    DAGEnv(DAGConfig(n_executors=10, max_slots=2, max_stages=2)).make_params(bank_of(70000))  # 2**20 − 1


def test_fig3_average_width():
    """Fig. 3: Σ stage lengths 27, critical path 15, average width 1.8 (a 4-stage DAG with those lengths:
    a(3) -> b(7) -> c(5) and a -> d(12))."""
    adj = np.zeros((4, 4), bool)
    adj[0, 1] = adj[1, 2] = adj[0, 3] = True
    tm = DAGTemplates.from_lists([dict(name="fig3", adj=adj, n_tasks=[1, 7, 5, 4], duration=[3, 1, 1, 3])])
    f = template_features(tm)
    assert f.work[0] == 27 and f.crit[0] == 15 and f.width[0] == pytest.approx(1.8)
    assert f.height[0].tolist() == [2, 1, 0, 0] and f.bottom[0].tolist() == [15, 12, 5, 12]
    # Fig. 3's two branches tie (b -> c and d are both 12): with d(2) instead, a's bottom level follows
    # the longer branch, b -> c; beside a one-stage job, each template's features are its own
    variant = dict(name="fig3-d2", adj=adj, n_tasks=[1, 7, 5, 1], duration=[3, 1, 1, 2])
    tm = DAGTemplates.from_lists([variant, dict(name="one", adj=[[0]], n_tasks=[2], duration=[4])])
    f = template_features(tm)
    assert f.work.tolist() == [17, 8] and f.crit.tolist() == [15, 8]
    np.testing.assert_allclose(f.width, [17 / 15, 1.0])
    assert f.height[0].tolist() == [2, 1, 0, 0] and f.bottom[0].tolist() == [15, 12, 5, 2]


# ---- jit / vmap --------------------------------------------------------------------------------------
def small_bank(seed=0, episodes=8):
    rng = np.random.default_rng(seed)
    tm = random_templates(rng, N_TEMPLATES, S)
    eps = [random_episode(rng, N_JOBS, N_TEMPLATES, 1000.0) for _ in range(episodes)]
    return make_bank(tm, np.stack([e[0] for e in eps]), np.stack([e[1] for e in eps]))


def test_vmap_equals_loop():
    from jaxsched.policies.dag import make_heuristic

    env = DAGEnv(DAGConfig(n_executors=K, max_slots=J, max_stages=S, idle_levels=G))
    params = env.make_params(small_bank(), moving_delay=250, warmup_delay=100)
    act = stateless(make_heuristic(env, "random"))
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    one = jax.jit(lambda k: run_episode(env, params, act, k))
    batched = jax.jit(jax.vmap(lambda k: run_episode(env, params, act, k)))(keys)
    for i, k in enumerate(keys):
        single = one(k)
        for key in ("avg_jct", "makespan", "n_finished", "return", "n_delayed", "events"):
            assert float(single[key]) == pytest.approx(float(batched[key][i]), rel=1e-6), key
    assert np.all(np.asarray(batched["n_finished"]) == N_JOBS)


def test_reset_asks_first_decision_and_auto_reset():
    env = DAGEnv(DAGConfig(n_executors=K, max_slots=J, max_stages=S, idle_levels=G))
    params = env.make_params(small_bank())
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    assert bool(obs.stage_mask.any()) and int(obs.n_idle) == K and int(state.t) == 0
    # auto-reset: a finished episode hands back a fresh state and the final observation in info
    from jaxsched.policies.dag import make_heuristic

    fifo = make_heuristic(env, "fifo")
    step = jax.jit(env.step)
    done_seen = 0
    for i in range(200):
        obs, state, r, term, trunc, info = step(jax.random.PRNGKey(i), state, fifo(None, obs, None), params)
        assert np.isfinite(float(r)) and float(r) <= 0.0
        # `observe_from_state`: the step observes the selected state once; that must be, leaf for leaf,
        # the stepped state's observation, or at an episode's end the fresh reset's
        want = info["final_observation"]
        if bool(info["done"]):
            done_seen += 1
            assert int(state.n_finished) == 0 and int(info["episode_metrics"]["n_finished"]) == N_JOBS
            want, _ = env.reset(jax.random.split(jax.random.PRNGKey(i))[1], params)
        for a, b in zip(jax.tree.leaves(obs), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert done_seen >= 2


# ---- the baselines equal their plain-Python versions, job for job ---------------------------------------
@pytest.mark.parametrize("name", ["fifo", "sjf", "cp", "dynamic"])
def test_heuristics_match_plain_python(name):
    from reference.dag_policies import ref_dag_policy

    from jaxsched.policies.dag import make_heuristic

    env, reset, step = env_and_step()
    policy = jax.jit(make_heuristic(env, name))
    covered = 0
    for seed in range(12):
        rng = np.random.default_rng(1000 + seed)
        tm = random_templates(rng, N_TEMPLATES, S, max_tasks=6)
        feats = template_features(tm)
        template, arrival = random_episode(rng, N_JOBS, N_TEMPLATES, mean_gap=800.0)
        knobs = dict(moving_delay=int(rng.choice([0, 300])), warmup_delay=int(rng.choice([0, 200])))
        params = env.make_params(make_bank(tm, template[None], arrival[None]), **knobs)
        ref = ref_env(tm, template, arrival, **knobs)
        snap = ref.reset()
        obs, state = reset(params)
        for i in range(400):
            a = ref_dag_policy(name, snap, ref, feats)
            a_jax = tuple(int(x) for x in policy(None, obs, jax.random.PRNGKey(i)))
            assert a_jax == a, f"{name} seed {seed} step {i}"
            covered += sum(m > 1 for m in np.asarray(obs.stage_mask).reshape(J, S).sum(1)) > 0
            snap, _, term, _ = ref.step(*a)
            obs, state, *_ = step(state, jnp.asarray(a, jnp.int32), params)
            if term:
                break
        assert np.asarray(state.jct).tolist() == snap["jct"].tolist()
    assert covered > 20  # choices between several runnable stages of a job were exercised


def test_dynamic_partition_when_every_job_is_at_its_cap():
    """k = 4, two jobs, cap ⌈4/2⌉ = 2. A: a0 (10 × 1 000 ms), a1 (1 × 500), B: b0 (3 × 1 500) -> b1. At 0,
    A's a0 gets 2 executors, B's b0 the other 2. At 1 500 one of b0's executors finds no task (b1 still
    blocked): A is at its cap, B has nothing runnable, so A's lowest runnable stage (a0 again: the trigger
    cleared the round's selections) gets one executor more than A holds (limit 3, not the cap)."""
    from jaxsched.policies.dag import make_heuristic

    tm = DAGTemplates.from_lists(
        [
            dict(name="A", adj=np.zeros((2, 2), bool), n_tasks=[10, 1], duration=[1000, 500]),
            dict(name="B", adj=np.array([[0, 1], [0, 0]], bool), n_tasks=[3, 1], duration=[1500, 100]),
        ]
    )
    env = DAGEnv(DAGConfig(n_executors=4, max_slots=2, max_stages=2))
    params = env.make_params(make_bank(tm, [[0, 1]], [[0, 0]]))
    dynamic = make_heuristic(env, "dynamic")
    obs, state = env.reset_env(jax.random.PRNGKey(0), params)
    actions = []
    for _ in range(3):
        a = dynamic(None, obs, None)
        actions.append(tuple(int(x) for x in a))
        obs, state, *_ = env.step_env(jax.random.PRNGKey(0), state, a, params)
    assert actions == [(0, 1, 0), (2, 1, 0), (0, 2, 0)]


# ---- invariants over generated workloads (hypothesis) -----------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    moving=st.sampled_from([0, 200]),
    warmup=st.sampled_from([0, 150]),
    gap=st.sampled_from([0.0, 400.0, 3000.0]),
)
def test_invariants_under_random_valid_actions(seed, moving, warmup, gap):
    """At every step: an executor runs a stage whose parents are all finished; a stage's running executors
    are exactly its started-but-unfinished tasks (no double booking, no lost task); no stage is delayed twice;
    time never goes back; every job finishes exactly once."""
    from jaxsched.policies.dag import make_heuristic

    env, reset, step = env_and_step()
    rng = np.random.default_rng(seed)
    tm = random_templates(rng, N_TEMPLATES, S)
    template, arrival = random_episode(rng, N_JOBS, N_TEMPLATES, gap + 1.0)
    params = env.make_params(
        make_bank(tm, template[None], arrival[None]), moving_delay=moving, warmup_delay=warmup
    )
    policy = jax.jit(make_heuristic(env, "random"))
    obs, state = reset(params)
    delayed, t_prev, finished_at = set(), 0, {}
    for i in range(600):
        a = policy(None, obs, jax.random.PRNGKey(seed % 1000 + i))
        slot_job = np.asarray(state.slot_job)
        obs, state, _, term, _, info = step(state, a, params)
        a = np.asarray(a)
        if a[2] > 0 and not bool(info["invalid"]):
            key = (int(slot_job[a[0] // S]), int(a[0] % S))
            assert key not in delayed, f"stage {key} delayed twice"
            delayed.add(key)
        t = int(state.t)
        assert t >= t_prev
        t_prev = t
        ex_state, ex_slot, ex_stage = (np.asarray(x) for x in (state.ex_state, state.ex_slot, state.ex_stage))
        counts = {f: np.asarray(x) for f, x in env.stage_counts(state).items()}
        fin = (np.asarray(state.fin_bits)[:, None] >> np.arange(S)[None, :]) & 1
        parents = np.asarray(state.parents)
        running = np.zeros((J, S), int)
        for e in np.flatnonzero(ex_state == 1):
            j, s = ex_slot[e], ex_stage[e]
            running[j, s] += 1
            for p in range(S):
                if (parents[j, s] >> p) & 1:
                    assert fin[j, p] and counts["left"][j, p] == 0 and counts["running"][j, p] == 0, (
                        f"stage {s} runs before its parent {p} finished"
                    )
        valid = (np.asarray(state.stage_bits)[:, None] >> np.arange(S)[None, :]) & 1 == 1
        np.testing.assert_array_equal(np.where(valid, counts["running"], 0), running)
        n_tasks = np.asarray(tm.n_tasks)[np.asarray(state.slot_tmpl)]
        assert (counts["left"] + counts["running"] <= n_tasks)[valid].all()  # no task started twice
        for job, jct in enumerate(np.asarray(state.jct)):
            if jct >= 0:
                assert finished_at.setdefault(job, jct) == jct  # finishes once, its JCT never changes
        if bool(term):
            break
    assert bool(term) and sorted(finished_at) == list(range(N_JOBS))


def test_trace_accounts_for_every_task():
    """`envs.dag_trace`: the executors' runs never overlap and add up to the episode's work exactly (no
    warm-up or moves), under FIFO and under random choices with idle slots; the slots are the policy's."""
    from jaxsched.envs.dag.trace import trace_episode
    from jaxsched.policies.dag import make_heuristic

    env = DAGEnv(DAGConfig(n_executors=K, max_slots=J, max_stages=S, idle_levels=G))
    params = env.make_params(small_bank(seed=4, episodes=1))
    work = float(np.asarray(params.bank.work)[np.asarray(params.bank.template[0])].sum())
    for name in ("fifo", "random"):
        runs, holds, m = trace_episode(env, params, make_heuristic(env, name), None, jax.random.PRNGKey(2))
        assert m["n_finished"] == N_JOBS
        assert sum(r.end_s - r.start_s for r in runs) == pytest.approx(work, abs=1e-3)
        for e in range(K):
            mine = [r for r in runs if r.executor == e]
            assert all(a.end_s <= b.start_s for a, b in zip(mine, mine[1:], strict=False))
        assert len(holds) == m["n_delayed"] and (name == "random") == (len(holds) > 0)


@pytest.mark.parametrize("cap,unrolled", [(1, True), (2, True), (2, False)])
def test_max_events_only_splits_steps(cap, unrolled, monkeypatch):
    """A capped env takes the same decisions at the same times and ends with the same JCTs and return as
    the uncapped one; its extra steps are marked `decision = False` and ignore their action. It processes
    the same event times in all, at most `cap` per step; in unrolled copies of an event time or, above
    `_MAX_UNROLLED_EVENTS`, in a `while_loop`."""
    import jaxsched.envs.dag.env as dag_module

    monkeypatch.setattr(dag_module, "_MAX_UNROLLED_EVENTS", 4 if unrolled else 0)
    import dataclasses

    from jaxsched.policies.dag import make_heuristic

    base = DAGEnv(DAGConfig(n_executors=K, max_slots=J, max_stages=S, idle_levels=G))
    capped = DAGEnv(dataclasses.replace(base.config, max_events=cap))
    params = base.make_params(small_bank(seed=9, episodes=1), moving_delay=250, warmup_delay=100)
    runs = {}
    for name, env in (("base", base), ("capped", capped)):
        policy = make_heuristic(env, "dynamic")
        step = jax.jit(env.step_env)
        obs, state = env.reset_env(jax.random.PRNGKey(0), params)
        decisions, total, extra, events = [], 0.0, 0, 0
        for _ in range(2000):
            a = policy(None, obs, None)
            obs2, state, r, term, trunc, info = step(jax.random.PRNGKey(0), state, a, params)
            total += float(r)
            events += int(info["events"])
            assert env.config.max_events is None or int(info["events"]) <= cap
            if bool(info["decision"]):
                decisions.append((int(obs.t), tuple(int(x) for x in a)))
            else:
                extra += 1
            obs = obs2
            if bool(term):
                break
        assert events == int(state.events) > 0
        runs[name] = (decisions, total, np.asarray(state.jct).tolist(), extra, events)
    assert runs["capped"][0] == runs["base"][0] and runs["capped"][2] == runs["base"][2]
    assert runs["capped"][1] == pytest.approx(runs["base"][1], rel=1e-5)
    assert runs["base"][3] == 0 and runs["capped"][3] > 0
    assert runs["capped"][4] == runs["base"][4]

"""The GPU-cloud (DAS) env: differential test against the plain-Python float64 reference
(`tests/reference/gpu_cloud.py`), the contention model on hand-computed schedules, invariants over random
episodes (random actions and every heuristic), the sampled view, the environment contract (traces, vmap,
determinism, auto-reset) and input validation.

Compile time is CI time: every rollout goes through one jitted `lax.scan` per config (`runner`), whose
inputs (params, key, a policy index, an action sequence) never change its shapes. Banks are padded to
`BANK_JOBS` jobs so that every scenario reuses the same compiled program.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax
from reference.gpu_cloud import ReferenceGPUCloud

from jaxsched.envs.gpu_cloud.env import GPUCloudAction, GPUCloudConfig, GPUCloudEnv
from jaxsched.envs.gpu_cloud.obs import N_LOAD_FEATURES
from jaxsched.policies.gpu_cloud import HEURISTICS, make_heuristic
from jaxsched.workloads.ddl import fits_empty_cluster, make_ddl_workload

KEY0 = jax.random.PRNGKey(0)
PRICE = 2.84
BANK_JOBS = 40  # every bank has this many jobs (padded), so every rollout has the same shapes
T_STEPS = 3 * BANK_JOBS + 2  # > starts (<= E) + forward events (<= 2E): every episode ends within it
MACHINE = dict(gpu=800, cpu=9600, mem=128 * 1024)
# The main config: the whole queue visible (N == Q, the reference's scope); a small running set, so that
# "fits but no running slot" also happens.
CFG = GPUCloudConfig(n_machines=3, n_slots=6, queue_capacity=6, max_running=4)
# Sampled views: N < Q.
CFG_VIEW = GPUCloudConfig(n_machines=2, n_slots=4, queue_capacity=16, max_running=4)
POLICIES = ("given", *HEURISTICS, "random")  # index 0: the action sequence passed in
METRIC_KEYS = (
    "avg_jct_min",
    "avg_fee",
    "avg_wait_min",
    "avg_duration_min",
    "finished",
    "failed",
    "gpu_util",
    "makespan_h",
    "steps",
)


# ---- one compiled rollout per config ----------------------------------------------------------------
@functools.cache
def runner(config: GPUCloudConfig):
    """`(env, run)`, `run(params, key, policy, prio f32[T, N], aff f32[T, N, M]) -> (obs0, state0, outs)`:
    reset, then `T_STEPS` decisions through `step_env` (no auto-reset; steps after the end are no-ops).
    `policy` indexes `POLICIES` (0: the given actions) through one `lax.switch`, so the heuristics add no
    compile. `outs` holds per step the action, what the round saw and did, the new observation, state
    fields and metrics."""
    env = GPUCloudEnv(config)
    pols = [make_heuristic(n) for n in POLICIES[1:]]

    def run(params, key, policy, prio, aff):
        k_reset, k_loop = jax.random.split(key)
        obs0, state0 = env.reset_env(k_reset, params)

        def body(carry, x):
            obs, state, k = carry
            k, k_act, k_step = jax.random.split(k, 3)
            given = GPUCloudAction(priority=x[0], affinity=x[1])
            branches = [lambda o, kk: given] + [lambda o, kk, p=p: p(None, o, kk) for p in pols]
            action = lax.switch(policy, branches, obs, k_act)
            slot_job = jnp.where(state.view >= 0, state.q_rows[jnp.maximum(state.view, 0), 0], -1)
            obs2, state2, reward, term, trunc, info = env.step_env(k_step, state, action, params)
            out = {
                "action": action,
                "view_before": state.view,
                "slot_job": slot_job,
                "t_before": state.t,
                "obs": obs2,
                "reward": reward,
                "terminated": term,
                "truncated": trunc,
                "info": info,
                "t": state2.t,
                "free": state2.free,
                "q_job": state2.q_rows[:, 0],
                "q_len": state2.q_len,
                "view": state2.view,
                "next_job": state2.next_job,
                "n_updates": state2.n_updates,
                "run_job": state2.run_job,
                "run_alloc": state2.run_alloc,
                "run_dem": state2.run_dem,
                "metrics": env.metrics(state2, params),
            }
            return (obs2, state2, k), out

        _, outs = lax.scan(body, (obs0, state0, k_loop), (prio, aff))
        return obs0, state0, outs

    return env, jax.jit(run)


def rollout(config, params, key=KEY0, policy=0, prio=None, aff=None):
    """Run `runner(config)`; `prio`/`aff` default to zeros (all ties). Returns numpy trees."""
    env, run = runner(config)
    n, m = config.n_slots, config.n_machines
    prio = np.zeros((T_STEPS, n), np.float32) if prio is None else prio
    aff = np.zeros((T_STEPS, n, m), np.float32) if aff is None else aff
    out = run(params, key, jnp.int32(policy), jnp.asarray(prio, jnp.float32), jnp.asarray(aff, jnp.float32))
    return jax.device_get(out)


# ---- workloads ----------------------------------------------------------------------------------------
# (instances, GPU per instance): single-GPU and fractional jobs, whole machines, and jobs that cannot fit
# one 8-GPU machine (3 x 4, 2 x 8, 3 x 8, 6 x 2 ... must spread).
SIZES = ((1, 50), (1, 100), (1, 200), (1, 400), (1, 800), (2, 100), (2, 400), (2, 800), (3, 400), (3, 800),
         (4, 200), (4, 400), (6, 200), (2, 300))  # fmt: skip
SIZE_WEIGHTS = np.array([3, 3, 2, 2, 1, 1, 1, 1, 1, 0.5, 1, 0.5, 0.5, 1]) / 18.5  # mostly small jobs


def bank_from(cols: dict, n_machines: int, machine=MACHINE):
    """A `DDLWorkload` of `BANK_JOBS` jobs: `cols` (the first jobs), then filler jobs that never arrive in
    an episode of the given jobs. Jobs too large for the empty cluster fall back to one instance."""
    n = len(cols["submit"])
    pad = BANK_JOBS - n
    full = {
        "submit": np.concatenate(
            [np.asarray(cols["submit"]), np.max(cols["submit"]) + 10**6 + np.arange(pad)]
        ),
        "n_inst": np.concatenate([np.asarray(cols["n_inst"]), np.ones(pad, int)]),
        "gpu": np.concatenate([np.asarray(cols["gpu"]), np.full(pad, 100)]),
        "cpu": np.concatenate([np.asarray(cols.get("cpu", np.zeros(n, int))), np.zeros(pad, int)]),
        "mem": np.concatenate([np.asarray(cols.get("mem", np.zeros(n, int))), np.zeros(pad, int)]),
        "work": np.concatenate([np.asarray(cols["work"], float), np.full(pad, 100.0)]),
        "model": np.concatenate([np.asarray(cols.get("model", np.zeros(n, int))), np.zeros(pad, int)]),
    }
    w = make_ddl_workload(**full, validate=False)
    caps = {f"{k}_cap": np.full(n_machines, v) for k, v in machine.items()}
    ok = fits_empty_cluster(w, **caps)
    full["n_inst"] = np.where(ok, full["n_inst"], 1)
    return make_ddl_workload(**full)


def random_cols(rng: np.random.Generator, n: int = BANK_JOBS) -> dict:
    """Bursty integer-second submits (so the queue fills and arrivals wait outside), the sizes above,
    CPU-heavy (up to a whole machine's CPU per instance) and memory-heavy jobs, all 9 model types and
    distinct continuous works."""
    gaps = rng.choice([0, 0, 0, 1, 2, 5, 20, 60, 120, 300, 600], size=n)
    submit = np.cumsum(gaps) + int(rng.integers(0, 100))
    size = rng.choice(len(SIZES), n, p=SIZE_WEIGHTS)
    n_inst = np.array([SIZES[i][0] for i in size])
    gpu = np.array([SIZES[i][1] for i in size])
    cpu = np.floor(gpu * rng.uniform(1.0, 8.0, n)).astype(int)
    heavy = rng.random(n) < 0.25
    cpu[heavy] = rng.integers(3000, 9601, heavy.sum())
    mem = np.floor(gpu / 100 * rng.uniform(2.0, 12.0, n) * 1024).astype(int)
    big = rng.random(n) < 0.1
    mem[big] = rng.integers(40_000, MACHINE["mem"] + 1, big.sum())
    work = rng.uniform(60.0, 4000.0, n)
    return dict(
        submit=submit, n_inst=n_inst, gpu=gpu, cpu=cpu, mem=mem, work=work, model=rng.integers(0, 9, n)
    )


def random_params(env: GPUCloudEnv, rng: np.random.Generator, **over):
    """A random bank, episode window and knobs (nonzero kappas and fluctuation, heterogeneous machines)."""
    m = env.config.n_machines
    bank = bank_from(random_cols(rng), m)
    e = int(rng.integers(25, BANK_JOBS + 1))
    kw = dict(
        starts=[int(rng.integers(0, BANK_JOBS - e + 1))],
        episode_jobs=e,
        machine=MACHINE,
        perf=rng.uniform(0.7, 1.2, m),
        bw_cap=rng.uniform(0.5, 1.5, m),
        fluct_std=float(rng.uniform(0.03, 0.2)),
        model_comm=rng.uniform(0.0, 1.0, 9),
        kappa_net=float(rng.uniform(0.2, 1.5)),
        kappa_cpu=float(rng.uniform(0.1, 1.0)),
        kappa_spread=float(rng.uniform(0.05, 0.5)),
        load_scale=float(rng.choice([0.5, 1.0, 2.0])),
    )
    kw.update(over)
    bank = kw.pop("bank", bank)
    return env.make_params(bank, **kw)


def random_actions(rng: np.random.Generator, config: GPUCloudConfig, ties: bool):
    """Priorities and affinities for every step; `ties`: small integers, so both tie-breaks are exercised."""
    n, m = config.n_slots, config.n_machines
    if ties:
        return rng.integers(0, 3, (T_STEPS, n)).astype(np.float32), rng.integers(
            0, 2, (T_STEPS, n, m)
        ).astype(np.float32)
    return rng.normal(size=(T_STEPS, n)).astype(np.float32), rng.normal(size=(T_STEPS, n, m)).astype(
        np.float32
    )


# ---- the reference ------------------------------------------------------------------------------------
def reference(env: GPUCloudEnv, params, state0) -> ReferenceGPUCloud:
    """The reference on the same bank, episode and knobs. It draws φ of update k itself (float64, from the
    spec's definition) from the episode's `noise_seed`, read from the JAX reset state: the JAX draw is
    checked, not fed to the reference. Queue capacity = the JAX env's; the reference shows the whole queue."""
    cfg = env.config
    b = jax.device_get(params.bank)
    f = lambda x: float(np.asarray(x))  # noqa: E731
    return ReferenceGPUCloud(
        b.submit,
        b.n_inst,
        b.gpu,
        b.cpu,
        b.mem,
        np.asarray(b.work, np.float64),
        b.model,
        start=int(state0.first),
        episode_jobs=int(params.episode_jobs),
        gpu_cap=np.asarray(params.gpu_cap),
        cpu_cap=np.asarray(params.cpu_cap),
        mem_cap=np.asarray(params.mem_cap),
        bw_cap=np.asarray(params.bw_cap, np.float64),
        perf=np.asarray(params.perf, np.float64),
        model_comm=np.asarray(params.model_comm, np.float64),
        kappa_net=f(params.kappa_net),
        kappa_cpu=f(params.kappa_cpu),
        kappa_spread=f(params.kappa_spread),
        price=f(params.price),
        alpha=f(params.alpha),
        jct_unit=f(params.jct_unit),
        load_scale=f(params.load_scale),
        n_slots=cfg.queue_capacity,
        queue_capacity=cfg.queue_capacity,
        max_running=cfg.max_running,
        noise_seed=int(state0.noise_seed),
        fluct_std=f(params.fluct_std),
        c_norm=f(params.c_norm),
        wait_norm=f(params.wait_norm),
        max_steps=int(params.max_steps),
    )


def at(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def compare_obs(ref_obs: dict, obs, where: str, q_len: int, view=None):
    """The JAX observation against the reference's; `view` maps JAX slots to the reference's queue
    positions (default: slot i shows position i)."""
    n = obs.job_mask.shape[0]
    k = int(obs.job_mask.sum())
    pos = np.arange(n) if view is None else np.where(view >= 0, view, 0)
    live = obs.job_mask
    assert k == min(q_len, n), where
    np.testing.assert_array_equal(live, np.arange(n) < k, err_msg=where)
    np.testing.assert_array_equal(ref_obs["job_mask"][pos][live], live[live], err_msg=where)
    np.testing.assert_allclose(obs.jobs[live], ref_obs["jobs"][pos][live], rtol=0, atol=1e-4, err_msg=where)
    assert not obs.jobs[~live].any(), where
    np.testing.assert_array_equal(obs.n_inst[live], ref_obs["n_inst"][pos][live], err_msg=where)
    np.testing.assert_array_equal(obs.demand[live], ref_obs["demand"][pos][live], err_msg=where)
    np.testing.assert_array_equal(obs.arrival_rank[live], ref_obs["arrival_rank"][pos][live], err_msg=where)
    np.testing.assert_allclose(obs.machines, ref_obs["machines"], rtol=0, atol=1e-4, err_msg=where)
    np.testing.assert_array_equal(obs.free, ref_obs["free"], err_msg=where)
    np.testing.assert_array_equal(obs.cap, ref_obs["cap"], err_msg=where)
    np.testing.assert_allclose(obs.t, ref_obs["t"], rtol=1e-5, atol=1e-3, err_msg=where)
    # The critic's global state: the job rows, their mask and the machine rows (each checked above), then
    # the load features (pending, running, waiting outside, mean wait) against the reference's.
    want = np.concatenate([obs.jobs.ravel(), live, obs.machines.ravel(), ref_obs["load"]])
    assert obs.global_state.shape == (want.size,) and want.size == n * 6 + obs.machines.size + N_LOAD_FEATURES
    np.testing.assert_allclose(obs.global_state, want, rtol=1e-5, atol=1e-5, err_msg=where)


def check_against_reference(config, params, key=KEY0, policy=0, prio=None, aff=None, label=""):
    """One episode through both simulators with the same actions (the JAX side's, for a heuristic), step by
    step. With N < Q the reference (which holds the whole queue) is shown the JAX env's sampled view
    through its `view` hook. Returns a summary of what the episode exercised."""
    env, _ = runner(config)
    obs0, state0, outs = rollout(config, params, key, policy, prio, aff)
    ref = reference(env, params, state0)
    n, m, q_cap = config.n_slots, config.n_machines, config.queue_capacity
    compare_obs(ref.reset(), obs0, f"{label} reset", len(ref.queue), np.asarray(state0.view))
    seen = dict.fromkeys(
        (
            "placed",
            "failed",
            "spread",
            "queue_full_waiting",
            "tie_rounds",
            "running_full",
            "forced_with_feasible",
            "truncated",
            "arrived_now_outside",
        ),
        0,
    )
    for i in range(T_STEPS):
        where = f"{label} step {i}"
        a = at(outs["action"], i)
        view = outs["view_before"][i]
        visible = view[view >= 0].tolist()
        prio_ref = np.zeros(q_cap)
        aff_ref = np.zeros((q_cap, m))
        prio_ref[: len(visible)] = np.asarray(a.priority, np.float64)[: len(visible)]
        aff_ref[: len(visible)] = np.asarray(a.affinity, np.float64)[: len(visible)]
        feasible_before = ref.any_feasible()
        n_running = len(ref.running)
        r = ref.step(prio_ref, aff_ref, view=None if n == q_cap else visible)
        info = at(outs["info"], i)
        # the round: which jobs started, where, and which failed
        got_placed = {
            int(j): info["placed_alloc"][s].tolist() for s, j in enumerate(info["placed_job"]) if j >= 0
        }
        ref_placed = {b: [alloc.get(mm, 0) for mm in range(m)] for b, alloc in r["placed"]}
        assert got_placed == ref_placed, f"{where}: placed {got_placed} != reference {ref_placed}"
        slot_job = outs["slot_job"][i]
        got_failed = sorted(int(j) for s, j in enumerate(slot_job) if j >= 0 and info["placed_job"][s] < 0)
        assert got_failed == sorted(r["failed"]), f"{where}: failed {got_failed} != {sorted(r['failed'])}"
        assert int(info["failed"]) == len(r["failed"]) and int(info["placed"]) == len(r["placed"]), where
        # the forward: who finished, with what JCT and fee
        done = info["finished_job"] >= 0
        got_fin = dict(zip(info["finished_job"][done].tolist(), info["finished_jct"][done], strict=True))
        got_fee = dict(zip(info["finished_job"][done].tolist(), info["finished_fee"][done], strict=True))
        ref_fin = {x["bank"]: x for x in r["finished"]}
        assert sorted(got_fin) == sorted(ref_fin), f"{where}: finished {sorted(got_fin)} != {sorted(ref_fin)}"
        assert int(info["finished"]) == len(ref_fin), where
        for b, x in ref_fin.items():
            np.testing.assert_allclose(got_fin[b], x["jct"], rtol=1e-4, err_msg=f"{where} JCT of job {b}")
            np.testing.assert_allclose(got_fee[b], x["fee"], rtol=1e-4, err_msg=f"{where} fee of job {b}")
        # reward, flags, time, speed-update count (the fluctuation index), queue, arrivals, resources
        np.testing.assert_allclose(outs["reward"][i], r["reward"], rtol=1e-4, atol=1e-5, err_msg=where)
        assert bool(outs["terminated"][i]) == r["terminated"], where
        assert bool(outs["truncated"][i]) == r["truncated"], where
        np.testing.assert_allclose(outs["t"][i], ref.t, rtol=1e-5, atol=1e-3, err_msg=where)
        assert int(outs["n_updates"][i]) == ref.n_speed_updates, where
        q_len = int(outs["q_len"][i])
        assert outs["q_job"][i][:q_len].tolist() == ref.queue, f"{where}: queue"
        assert int(outs["next_job"][i]) == ref.ptr, where
        np.testing.assert_array_equal(outs["free"][i], np.asarray(ref.free), err_msg=where)
        compare_obs(r["obs"], at(outs["obs"], i), where, q_len, outs["view"][i])
        got_m, ref_m = at(outs["metrics"], i), ref.metrics()
        for k in METRIC_KEYS:
            np.testing.assert_allclose(got_m[k], ref_m[k], rtol=1e-4, atol=1e-6, err_msg=f"{where} {k}")
        seen["placed"] += len(r["placed"])
        seen["truncated"] += bool(r["truncated"])
        seen["failed"] += len(r["failed"])
        seen["spread"] += sum(len(alloc) > 1 for _, alloc in r["placed"])
        # the round filled the running set while visible jobs were left: they fail for want of a slot
        seen["running_full"] += n_running + len(r["placed"]) == ref.R and len(r["failed"]) > 0
        # nothing started although a queued (unseen) job could: the forced forward iteration
        seen["forced_with_feasible"] += feasible_before and not r["placed"]
        seen["queue_full_waiting"] += (
            q_len == q_cap and ref.ptr < ref.end and ref.jobs[ref.ptr].arrival < ref.t
        )
        # a job arriving at this very instant has not joined the list (it was full at the arrival, or a
        # round started jobs since and the forward did not run): the load features count it as waiting
        # outside (`arrival <= t`, the tie included)
        seen["arrived_now_outside"] += ref.ptr < ref.end and ref.jobs[ref.ptr].arrival == ref.t
        pr = np.asarray(a.priority)[: len(visible)]
        seen["tie_rounds"] += len(set(pr.tolist())) < len(pr)
        if r["terminated"]:
            break
    else:
        raise AssertionError(f"{label}: the episode did not end in {T_STEPS} steps")
    ref.check_invariants()
    return seen


# ---- differential tests -------------------------------------------------------------------------------
def test_differential_random_actions():
    """20 random episodes (25-40 jobs of a random bank, random knobs, random actions; half of them with
    tied priorities and affinities): every step agrees with the float64 reference."""
    env, _ = runner(CFG)
    seen = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        # every fourth episode with a truncation guard it passes (the flag compared at every step after)
        params = random_params(env, rng, **({"max_steps": 12} if seed % 4 == 0 else {}))
        prio, aff = random_actions(rng, CFG, ties=seed % 2 == 1)
        seen.append(
            check_against_reference(CFG, params, jax.random.PRNGKey(seed), 0, prio, aff, f"seed {seed}")
        )
    total = {k: sum(s[k] for s in seen) for k in seen[0]}
    # the episodes exercise what they are meant to
    assert total["placed"] >= 500 and total["failed"] > 100 and total["spread"] > 30, total
    assert total["queue_full_waiting"] > 20 and total["tie_rounds"] > 50 and total["running_full"] > 5, total
    assert total["truncated"] > 0 and total["arrived_now_outside"] > 0, total


@pytest.mark.parametrize("policy", POLICIES[1:])
def test_differential_heuristics(policy):
    """Each heuristic (and the random policy) on two random episodes: the reference replays the actions
    the JAX policy chose from the JAX observations (which agree with the reference's at every step)."""
    env, _ = runner(CFG)
    for seed in (100, 101):
        params = random_params(env, np.random.default_rng(seed))
        check_against_reference(CFG, params, jax.random.PRNGKey(seed), POLICIES.index(policy), label=policy)


def test_differential_sampled_view():
    """N = 4 of Q = 16: the reference, shown the JAX env's sampled view each round through its `view`
    hook, agrees at every step. Rounds that start nothing while an unseen queued job could start take the
    forced forward iteration."""
    env, _ = runner(CFG_VIEW)
    forced = 0
    for seed in range(4):
        rng = np.random.default_rng(1000 + seed)
        params = random_params(env, rng)
        prio, aff = random_actions(rng, CFG_VIEW, ties=seed % 2 == 0)
        seen = check_against_reference(
            CFG_VIEW, params, jax.random.PRNGKey(seed), 0, prio, aff, f"view seed {seed}"
        )
        forced += seen["forced_with_feasible"]
    assert forced >= 3


# ---- contention: hand-computed schedules (perf 1, fluct_std 0) ------------------------------------------
COMM = np.array([0.0, 0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # model 0: 0, model 1: 0.5, model 2: 1.0


def scenario(jobs: list[dict], favour: list, machine=MACHINE, perf=None, **knobs):
    """Jobs (dicts: submit, c, gpu, work; cpu, mem, model default 0) on CFG's 3 machines. `favour[i]` is the
    machine order of every job's affinity in round i (the last one repeats). Returns per job `{start,
    alloc, jct, fee}`, the outputs and the reset observation."""
    m = CFG.n_machines
    cols = {
        "submit": [j["submit"] for j in jobs],
        "n_inst": [j["c"] for j in jobs],
        "gpu": [j["gpu"] for j in jobs],
        "cpu": [j.get("cpu", 0) for j in jobs],
        "mem": [j.get("mem", 0) for j in jobs],
        "work": [j["work"] for j in jobs],
        "model": [j.get("model", 0) for j in jobs],
    }
    env, _ = runner(CFG)
    knobs = dict(dict(kappa_net=0.0, kappa_cpu=0.0, kappa_spread=0.0), **knobs)
    params = env.make_params(
        bank_from(cols, m, machine),
        starts=[0],
        episode_jobs=len(jobs),
        machine=machine,
        perf=perf,
        fluct_std=0.0,
        model_comm=COMM,
        **knobs,
    )
    aff = np.zeros((T_STEPS, CFG.n_slots, m), np.float32)
    for i in range(T_STEPS):
        for rank, mm in enumerate(favour[min(i, len(favour) - 1)]):
            aff[i, :, mm] = m - rank
    obs0, _, outs = rollout(CFG, params, aff=aff)
    recs: dict[int, dict] = {}
    for i in range(T_STEPS):
        info = at(outs["info"], i)
        for s, j in enumerate(info["placed_job"]):
            if j >= 0:
                recs[int(j)] = {
                    "start": float(outs["t_before"][i]),
                    "alloc": info["placed_alloc"][s].tolist(),
                }
        for r, j in enumerate(info["finished_job"]):
            if j >= 0:
                recs[int(j)].update(jct=float(info["finished_jct"][r]), fee=float(info["finished_fee"][r]))
    assert outs["terminated"].any() and len(recs) == len(jobs)
    return recs, outs, obs0


def fee(gpus, duration):
    return PRICE * gpus * duration / 3600.0


@pytest.mark.parametrize("layout", ["packed", "spread"])
def test_packed_vs_spread(layout):
    # Job 0 (1 x 4 GPUs, comm 0, work 1e5) starts at t = 0 on machine 0. Job 1 (2 x 4 GPUs, model 1: comm
    # 0.5, work 1000) arrives at 10. Favouring machine 0 first it gets one instance there (4 GPUs left)
    # and one on machine 1 (k = 2); favouring machine 1 first both fit there (packed, k = 1).
    # kappa_spread 0.2, kappa_net 0.5 (no other distributed job: no network term).
    #   packed: speed 1 -> duration 1000, fee 2.84 * 8 * 1000 / 3600 = 6.3111
    #   spread: duration = work * (1 + 0.2 * 0.5 * (2 - 1)) = 1100, fee 2.84 * 8 * 1100 / 3600 = 6.9422
    # Job 0 is not distributed and uses no CPU: speed 1, JCT 1e5, fee 2.84 * 4 * 1e5 / 3600 = 315.56.
    jobs = [dict(submit=0, c=1, gpu=400, work=1e5), dict(submit=10, c=2, gpu=400, work=1000.0, model=1)]
    favour = [[0, 1, 2], [0, 1, 2] if layout == "spread" else [1, 0, 2]]
    recs, _, _ = scenario(jobs, favour, kappa_net=0.5, kappa_spread=0.2)
    assert recs[0]["alloc"] == [1, 0, 0] and recs[0]["start"] == 0.0
    assert recs[1]["start"] == 10.0
    duration = 1100.0 if layout == "spread" else 1000.0
    assert recs[1]["alloc"] == ([1, 1, 0] if layout == "spread" else [0, 2, 0])
    assert recs[1]["jct"] == pytest.approx(duration, rel=1e-6)
    assert recs[1]["fee"] == pytest.approx(fee(8, duration), rel=1e-6)
    assert recs[1]["fee"] == pytest.approx(6.9422222 if layout == "spread" else 6.3111111, rel=1e-6)
    assert recs[0]["jct"] == pytest.approx(1e5, rel=1e-6) and recs[0]["fee"] == pytest.approx(
        315.55556, rel=1e-6
    )


def test_spread_over_three_machines():
    # 3 x 8 GPUs (model 2: comm 1, work 1000) must take one whole machine each: k = 3. Each machine's NIC
    # carries only this job, so slow = 1: duration = 1000 * (1 + 0.3 * 1 * (3 - 1)) = 1600,
    # fee 2.84 * 24 * 1600 / 3600 = 30.293.
    recs, _, _ = scenario([dict(submit=0, c=3, gpu=800, work=1000.0, model=2)], [[2, 1, 0]], kappa_spread=0.3)
    assert recs[0]["alloc"] == [1, 1, 1]
    assert recs[0]["jct"] == pytest.approx(1600.0, rel=1e-6)
    assert recs[0]["fee"] == pytest.approx(30.293333, rel=1e-6)


@pytest.mark.parametrize("together", [False, True])
def test_two_distributed_jobs_share_the_network(together):
    # Memory 1000 MiB per machine. A (2 x 4 GPUs, mem 600, model 2: comm 1, work 1000) fits one instance
    # per machine (machines 0 and 1 favoured); B (2 x 4 GPUs, mem 400, comm 1, work 2000) then fits one per
    # machine next to A. kappa_net 0.5, kappa_spread 0.2.
    #   A alone: speed 1 / (1 + 0.2 * 1 * 1) = 1/1.2 -> duration 1200, fee 2.84 * 8 * 1200 / 3600 = 7.5733
    #   together: each job has g = 4/8, net = 1 * 1 * 0.5 / 1 = 0.5 on each machine, NET_m = 1.0;
    #   slow = 1 + 0.5 * 1 * (1.0 - 0.5) = 1.25 -> speed (1 / 1.25) / 1.2 = 2/3 for both.
    #   A: 1000 / (2/3) = 1500 (fee 9.4667). B has done 1000 by then; alone at 1/1.2 the other 1000 take
    #   1200 more: B finishes at 2700 (fee 2.84 * 8 * 2700 / 3600 = 17.04).
    a = dict(submit=0, c=2, gpu=400, mem=600, work=1000.0, model=2)
    b = dict(submit=0, c=2, gpu=400, mem=400, work=2000.0, model=2)
    machine = dict(gpu=800, cpu=9600, mem=1000)
    recs, outs, _ = scenario(
        [a, b] if together else [a], [[0, 1, 2]], machine, kappa_net=0.5, kappa_spread=0.2
    )
    assert recs[0]["alloc"] == [1, 1, 0]
    if not together:
        assert recs[0]["jct"] == pytest.approx(1200.0, rel=1e-6)
        assert recs[0]["fee"] == pytest.approx(7.5733333, rel=1e-6)
        return
    assert recs[1]["alloc"] == [1, 1, 0] and recs[1]["start"] == 0.0
    # After round 1 (A running, B queued at t = 0): machines (free cpu, gpu, mem, bw 1 - NET, GPU util)
    obs1 = at(outs["obs"], 0)
    np.testing.assert_allclose(obs1.machines[:2], np.tile([1.0, 0.5, 0.4, 0.5, 0.5], (2, 1)), atol=1e-6)
    np.testing.assert_allclose(obs1.machines[2], [1.0, 1.0, 1.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(obs1.jobs[0], [2 / 8, 0.0, 400 / 800, 400 / 1000, 0.0], atol=1e-6)
    assert recs[0]["jct"] == pytest.approx(1500.0, rel=1e-6) and recs[0]["fee"] == pytest.approx(
        9.4666667, rel=1e-6
    )
    assert recs[1]["jct"] == pytest.approx(2700.0, rel=1e-6) and recs[1]["fee"] == pytest.approx(
        17.04, rel=1e-6
    )
    # round 2 finished both: reward = mean of 1 / (fee * JCT in minutes)
    assert outs["terminated"][1]
    expected = (1 / (9.4666667 * 25.0) + 1 / (17.04 * 45.0)) / 2
    assert outs["reward"][1] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("colocated", [False, True])
def test_cpu_heavy_neighbour_slows_a_job(colocated):
    # H: 1 x 1 GPU, 48 cores (CPU share 0.5), work 3000, on machine 0. L: 1 x 1 GPU, 9.6 cores (share 0.1),
    # work 1000, on machine 0 (co-located) or machine 1. kappa_cpu 0.4; neither is distributed.
    #   apart: both alone, speed 1: L 1000 s (fee 2.84 * 1000 / 3600 = 0.78889), H 3000 s (2.3667)
    #   co-located: CPU_0 = 0.6. L: slow = 1 + 0.4 * (0.6 - 0.1) = 1.2 -> duration 1200 (fee 0.94667);
    #   H: slow = 1 + 0.4 * 0.1 = 1.04; by t = 1200 H did 1200 / 1.04 = 1153.846, then 1846.154 alone:
    #   H's duration 4200 - 1200 / 1.04 = 3046.1538 (fee 2.84 * 3046.1538 / 3600 = 2.40308)
    h = dict(submit=0, c=1, gpu=100, cpu=4800, work=3000.0)
    lo = dict(submit=0, c=1, gpu=100, cpu=960, work=1000.0)
    favour = [[0, 1, 2], [0, 1, 2] if colocated else [1, 0, 2]]
    recs, _, _ = scenario([h, lo], favour, kappa_cpu=0.4, kappa_net=1.0, kappa_spread=1.0)
    assert recs[0]["alloc"] == [1, 0, 0] and recs[1]["alloc"] == ([1, 0, 0] if colocated else [0, 1, 0])
    l_dur, h_dur = (1200.0, 4200.0 - 1200.0 / 1.04) if colocated else (1000.0, 3000.0)
    assert recs[1]["jct"] == pytest.approx(l_dur, rel=1e-6) and recs[1]["fee"] == pytest.approx(
        fee(1, l_dur), rel=1e-6
    )
    assert recs[0]["jct"] == pytest.approx(h_dur, rel=1e-6) and recs[0]["fee"] == pytest.approx(
        fee(1, h_dur), rel=1e-6
    )
    if colocated:
        assert recs[0]["jct"] == pytest.approx(3046.1538, rel=1e-6)
        assert recs[0]["fee"] == pytest.approx(2.4030769, rel=1e-6)
        assert recs[1]["fee"] == pytest.approx(0.9466667, rel=1e-6)


def test_heterogeneous_machine_perf():
    # perf [1, 0.8, 1]: the same job on machine 1 takes 1000 / 0.8 = 1250 s, fee 2.84 * 2 * 1250 / 3600
    recs, _, _ = scenario([dict(submit=0, c=1, gpu=200, work=1000.0)], [[1, 0, 2]], perf=[1.0, 0.8, 1.0])
    assert recs[0]["alloc"] == [0, 1, 0]
    assert recs[0]["jct"] == pytest.approx(1250.0, rel=1e-6) and recs[0]["fee"] == pytest.approx(
        1.9722222, rel=1e-6
    )


# ---- invariants over random episodes ------------------------------------------------------------------
def check_invariants(params, obs0, state0, outs, config):
    """Resources, job accounting, time and per-job records of one episode (to its end)."""
    e = int(params.episode_jobs)
    first = int(state0.first)
    cap = np.stack([np.asarray(params.gpu_cap), np.asarray(params.cpu_cap), np.asarray(params.mem_cap)], 1)
    b = jax.device_get(params.bank)
    arrival = (b.submit - b.submit[first]).astype(np.float64) / float(params.load_scale)
    end = np.flatnonzero(outs["terminated"])
    assert end.size, "the episode did not end"
    last = int(end[0])
    assert not outs["truncated"][: last + 1].any()
    t = np.concatenate([[0.0], outs["t"][: last + 1]])
    assert (np.diff(t) >= 0).all(), "time went backwards"
    assert (outs["t_before"][: last + 1] == t[:-1]).all()
    assert np.isfinite(obs0.jobs).all() and np.isfinite(obs0.machines).all()
    starts, jcts, fees = {}, {}, {}
    for i in range(last + 1):
        free = outs["free"][i]
        assert (free >= 0).all() and (free <= cap).all(), f"step {i}: free {free}"
        live = outs["run_job"][i] >= 0
        used = (outs["run_alloc"][i][live][:, :, None] * outs["run_dem"][i][live][:, None, :]).sum(0)
        np.testing.assert_array_equal(used + free, cap, err_msg=f"step {i}: allocations + free != capacity")
        np.testing.assert_array_equal(outs["run_alloc"][i][live].sum(1), b.n_inst[outs["run_job"][i][live]])
        assert 0 <= outs["q_len"][i] <= config.queue_capacity
        obs = at(outs["obs"], i)
        for x in (obs.jobs, obs.machines, obs.global_state):
            assert np.isfinite(x).all(), f"step {i}: observation not finite"
        assert ((obs.machines >= 0) & (obs.machines <= 1 + 1e-6)).all()
        assert obs.job_mask.sum() == min(outs["q_len"][i], config.n_slots)
        info = at(outs["info"], i)
        for s, j in enumerate(info["placed_job"]):
            if j >= 0:
                assert j not in starts, f"job {j} placed twice"
                assert info["placed_alloc"][s].sum() == b.n_inst[j]
                starts[int(j)] = float(outs["t_before"][i])
        for r, j in enumerate(info["finished_job"]):
            if j >= 0:
                assert j not in jcts, f"job {j} finished twice"
                jcts[int(j)], fees[int(j)] = float(info["finished_jct"][r]), float(info["finished_fee"][r])
    assert sorted(jcts) == list(range(first, first + e)), "every episode job finishes exactly once"
    assert sorted(starts) == sorted(jcts)
    max_speed = float(np.max(params.perf)) * 1.5  # φ <= 1.5, slowdowns >= 1
    for j, jct in jcts.items():
        duration = arrival[j] + jct - starts[j]
        assert starts[j] >= arrival[j] - 1e-3
        assert duration > 0 and jct >= duration - 1e-3, (j, jct, duration)
        assert duration >= b.work[j] / max_speed * (1 - 1e-5)
        gpus = b.n_inst[j] * b.gpu[j] / 100.0
        assert fees[j] == pytest.approx(PRICE * gpus * duration / 3600.0, rel=1e-4, abs=1e-6)
    m = at(outs["metrics"], last)
    assert int(m["finished"]) == e and int(m["steps"]) == last + 1
    assert m["avg_jct_min"] == pytest.approx(np.mean(list(jcts.values())) / 60.0, rel=1e-4)
    assert m["avg_fee"] == pytest.approx(np.mean(list(fees.values())), rel=1e-4)
    assert 0.0 < m["gpu_util"] <= 1.0 + 1e-5
    assert int(m["failed"]) == int(outs["info"]["failed"][: last + 1].sum())


job_strategy = st.tuples(
    st.sampled_from([0, 0, 1, 5, 30, 200, 900]),  # inter-arrival gap (s)
    st.integers(0, len(SIZES) - 1),  # size
    st.sampled_from([0, 100, 800, 4000, 9600]),  # CPU per instance (9600: a whole machine)
    st.integers(60, 5000),  # work (s)
    st.integers(0, 8),  # model
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    drawn=st.lists(job_strategy, min_size=BANK_JOBS, max_size=BANK_JOBS),
    policy=st.integers(0, len(POLICIES) - 1),
    seed=st.integers(0, 2**31 - 1),
)
def test_invariants(drawn, policy, seed):
    """Random banks, knobs and actions, or a heuristic: resources never leak or go negative, every job
    starts and finishes once, time is monotone, observations are finite, per-job records are consistent."""
    gap, size, cpu, work, model = (np.asarray(x) for x in zip(*drawn, strict=True))
    cols = dict(
        submit=np.cumsum(gap),
        n_inst=np.array([SIZES[i][0] for i in size]),
        gpu=np.array([SIZES[i][1] for i in size]),
        cpu=cpu,
        mem=np.zeros(BANK_JOBS, int),
        work=work + np.arange(BANK_JOBS) * 1e-3,
        model=model,
    )
    rng = np.random.default_rng(seed)
    env, _ = runner(CFG)
    params = random_params(env, rng, bank=bank_from(cols, CFG.n_machines))
    prio, aff = random_actions(rng, CFG, ties=bool(seed % 2))
    obs0, state0, outs = rollout(CFG, params, jax.random.PRNGKey(seed % 1000), policy, prio, aff)
    check_invariants(params, obs0, state0, outs, CFG)


# ---- the sampled view ---------------------------------------------------------------------------------
def long_queue_params(env):
    """Job 0 takes both machines of CFG_VIEW for 1e5 s; jobs 1..39 (one whole machine each) arrive at 1,
    2, ...: after round 1 the queue holds jobs 1..16 (full; the rest wait outside) at t = 1e5."""
    cols = dict(
        submit=np.arange(BANK_JOBS),
        n_inst=np.r_[2, np.ones(BANK_JOBS - 1, int)],
        gpu=np.full(BANK_JOBS, 800),
        work=np.r_[1e5, 100.0 + np.arange(BANK_JOBS - 1)],
    )
    return env.make_params(
        bank_from(cols, 2),
        starts=[0],
        episode_jobs=BANK_JOBS,
        machine=MACHINE,
        fluct_std=0.0,
        kappa_spread=0.0,
    )


def test_view_samples_distinct_live_positions_uniformly():
    env, _ = runner(CFG_VIEW)
    params = long_queue_params(env)
    n, q_cap = CFG_VIEW.n_slots, CFG_VIEW.queue_capacity
    views = []
    for s in range(300):
        obs0, _, outs = rollout(CFG_VIEW, params, jax.random.PRNGKey(s), POLICIES.index("fifo_firstfit"))
        assert outs["info"]["placed_job"][0].tolist() == [0, -1, -1, -1]
        assert outs["q_len"][0] == q_cap and outs["next_job"][0] == q_cap + 1 and outs["t"][0] == 1e5
        view = outs["view"][0]
        assert (np.diff(view) > 0).all() and view.min() >= 0 and view.max() < q_cap, view
        obs = at(outs["obs"], 0)
        assert obs.job_mask.all()
        # the queue is jobs 1..16 in order: slot i shows position view[i], i.e. job view[i] + 1
        np.testing.assert_array_equal(obs.arrival_rank, view + 1)
        np.testing.assert_allclose(obs.jobs[:, 4], (1e5 - (view + 1)) / 3600.0, rtol=1e-6)
        # round 2 places only what it sees: the two highest-priority (FIFO: earliest) visible jobs
        assert sorted(j for j in outs["info"]["placed_job"][1] if j >= 0) == (view[:2] + 1).tolist()
        views.append(tuple(view.tolist()))
    counts = np.bincount(np.asarray(views).ravel(), minlength=q_cap)
    assert (counts > 0).all(), counts  # every live position is sampled
    # uniform: each position is in a view with probability 4/16 (expected 75 of 300, std 7.5)
    assert (counts >= 40).all() and (counts <= 110).all(), counts
    assert len(set(views)) > 200  # different keys, different subsets (1820 possible)
    # the same key gives the same view
    again = rollout(CFG_VIEW, params, jax.random.PRNGKey(0), POLICIES.index("fifo_firstfit"))[2]["view"][0]
    assert tuple(again.tolist()) == views[0]
    assert n == 4


# ---- the environment contract ---------------------------------------------------------------------------
def contract_params(env, seed, **over):
    kw = dict(starts=[0, 20], episode_jobs=4)
    kw.update(over)
    return random_params(env, np.random.default_rng(seed), **kw)


@functools.cache
def jitted(config):
    """`(env, reset, step, batched_step)`: jitted `reset` and auto-reset `step`, each allowed ONE trace in
    this process (every test below passes params of the same shapes: a 40-job bank, two episode starts),
    and `step` vmapped over (key, state, action)."""
    env = GPUCloudEnv(config)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def reset(key, params):
        return env.reset(key, params)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action, params):
        return env.step(key, state, action, params)

    return env, reset, step, jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))


def test_step_and_reset_trace_once():
    """Different banks, knobs, episode lengths and keys reuse the one compiled reset and step."""
    env, reset, step, _ = jitted(CFG)
    rng = np.random.default_rng(0)
    variants = [
        contract_params(env, 0, starts=[0, 5]),
        contract_params(env, 1, starts=[3, 7], episode_jobs=30),
    ]
    for i, params in enumerate(variants):
        key = jax.random.PRNGKey(i)
        for _ in range(2):
            key, k1, k2 = jax.random.split(key, 3)
            obs, state = reset(k1, params)
            for _ in range(5):
                k2, ks = jax.random.split(k2)
                action = GPUCloudAction(
                    priority=jnp.asarray(rng.normal(size=CFG.n_slots), jnp.float32),
                    affinity=jnp.asarray(rng.normal(size=(CFG.n_slots, CFG.n_machines)), jnp.float32),
                )
                obs, state, *_ = step(ks, state, action, params)


def test_vmap_equals_python_loop():
    """A batch of 4 envs stepped 30 times with auto-reset: vmapped step == one env at a time."""
    env, reset, step, batched_step = jitted(CFG)
    params = contract_params(env, 2)
    rng = np.random.default_rng(2)
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    singles = [reset(k, params) for k in keys]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *singles)[1]
    n_done = 0
    for i in range(30):
        step_keys = jax.random.split(jax.random.PRNGKey(100 + i), 4)
        actions = GPUCloudAction(
            priority=jnp.asarray(rng.normal(size=(4, CFG.n_slots)), jnp.float32),
            affinity=jnp.asarray(rng.normal(size=(4, CFG.n_slots, CFG.n_machines)), jnp.float32),
        )
        got = batched_step(step_keys, batch, actions, params)
        loop = [step(step_keys[b], singles[b][1], at(actions, b), params) for b in range(4)]
        chex.assert_trees_all_close(
            jax.device_get(got), jax.tree.map(lambda *x: np.stack(x), *loop), rtol=1e-6, atol=1e-5
        )
        batch = got[1]
        singles = [(o, s) for o, s, *_ in loop]
        n_done += int(np.asarray(got[3]).sum())
    assert n_done >= 4  # several episodes ended and auto-reset inside the batch


def test_same_key_same_result():
    env, _ = runner(CFG)
    params = random_params(env, np.random.default_rng(5))
    random = POLICIES.index("random")
    a = rollout(CFG, params, jax.random.PRNGKey(1), random)
    b = rollout(CFG, params, jax.random.PRNGKey(1), random)
    chex.assert_trees_all_equal(a, b)
    c = rollout(CFG, params, jax.random.PRNGKey(2), random)
    assert not np.array_equal(a[2]["action"].priority, c[2]["action"].priority)
    assert a[1].noise_seed != c[1].noise_seed


def test_auto_reset_returns_a_fresh_state_and_the_final_observation():
    env, reset, step, _ = jitted(CFG)
    params = contract_params(env, 3, episode_jobs=3, starts=[4, 9])
    first_jobs = {4, 9}
    key = jax.random.PRNGKey(0)
    _, state = reset(key, params)
    n_done = 0
    for _ in range(60):
        key, k = jax.random.split(key)
        action = GPUCloudAction(
            priority=jnp.zeros(CFG.n_slots), affinity=jnp.zeros((CFG.n_slots, CFG.n_machines))
        )
        obs2, state2, reward, term, trunc, info = jax.device_get(step(k, state, action, params))
        assert bool(info["done"]) == bool(term | trunc)
        final = info["final_observation"]
        if not info["done"]:
            chex.assert_trees_all_equal(final, obs2)
            assert state2.steps == state.steps + 1
        else:
            n_done += 1
            assert term and state2.steps == 0 and state2.finished == 0 and state2.failed == 0
            assert int(info["episode_metrics"]["finished"]) == 3
            # the terminal observation: everything finished, the queue empty, the cluster free
            assert not final.job_mask.any() and final.t > 0
            np.testing.assert_array_equal(final.free, final.cap)
            # the returned state and observation are exactly a reset with the step's reset key
            obs_re, state_re = reset(jax.random.split(k)[1], params)
            chex.assert_trees_all_equal((obs2, state2), jax.device_get((obs_re, state_re)))
            assert state2.t == 0.0 and state2.q_len == 1 and int(state2.first) in first_jobs
            assert (state2.run_job < 0).all() and obs2.job_mask.tolist() == [True] + [False] * 5
        state = state2
    assert n_done >= 3


# ---- bad input ------------------------------------------------------------------------------------------
def small_bank(**over):
    cols = dict(submit=[0, 5, 9], n_inst=[1, 2, 1], gpu=[100, 400, 800], cpu=[100, 100, 100],
                mem=[10, 10, 10], work=[100.0, 200.0, 300.0], model=[0, 1, 2])  # fmt: skip
    cols.update(over)
    return make_ddl_workload(**cols, validate=False)


@pytest.mark.parametrize(
    "over,pattern",
    [
        (
            dict(gpu=[100, 900, 800]),
            r"'gpu'.*job 1 \(job_id 1\).*900",
        ),  # 9 GPUs per instance on 8-GPU machines
        (dict(work=[100.0, 200.0, -5.0]), r"'work'.*negative.*job 2 \(job_id 2\)"),
        (dict(n_inst=[4, 2, 1], gpu=[800, 400, 800]), r"'n_inst'.*job 0 \(job_id 0\) needs 4 instances"),
        (dict(cpu=[100, 9601, 100]), r"'cpu'.*job 1"),
        (dict(mem=[10, 10, -1]), r"'mem'.*job 2"),
    ],
)
def test_make_params_rejects_bad_jobs(over, pattern):
    env = GPUCloudEnv(CFG)  # 3 machines of 8 GPUs
    with pytest.raises(ValueError, match=pattern):
        env.make_params(small_bank(**over), episode_jobs=2, machine=MACHINE)


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(kappa_net=-0.1), "kappa_net"),
        (dict(kappa_cpu=float("nan")), "kappa_cpu"),
        (dict(kappa_spread=-1.0), "kappa_spread"),
        (dict(fluct_std=-0.01), "fluct_std"),
        (dict(load_scale=0.0), "load_scale"),
        (dict(price=0.0), "price"),
        (dict(perf=[1.0, 1.0]), "perf"),  # 2 values for 3 machines
        (dict(perf=[1.0, 0.0, 1.0]), "perf"),
        (dict(bw_cap=[1.0, -1.0, 1.0]), "bw_cap"),
        (dict(model_comm=[0.5] * 8), "model_comm"),
        (dict(episode_jobs=4), "episode_jobs"),
        (dict(episode_jobs=2, starts=[2]), "starts"),
    ],
)
def test_make_params_rejects_bad_knobs(kwargs, pattern):
    env = GPUCloudEnv(CFG)
    kwargs = dict(dict(episode_jobs=2, machine=MACHINE), **kwargs)
    with pytest.raises(ValueError, match=pattern):
        env.make_params(small_bank(), **kwargs)


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(n_machines=2, n_slots=8, queue_capacity=4), r"queue_capacity \(4\) must be >= n_slots \(8\)"),
        (dict(n_machines=0), "n_machines"),
        (dict(n_machines=2, n_slots=0), "n_slots"),
        (dict(n_machines=2, max_running=0), "max_running"),
    ],
)
def test_config_rejects_bad_sizes(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        GPUCloudConfig(**kwargs)


def test_valid_inputs_are_accepted():
    env = GPUCloudEnv(CFG)
    params = env.make_params(small_bank(), episode_jobs=2, machine=MACHINE)
    assert params.starts.tolist() == [0, 1] and int(params.episode_jobs) == 2


# ---- a capped forward ---------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", [1, 5])  # FIFO-FirstFit, Tetris (actions depend only on the observation)
def test_capped_forward_makes_the_same_decisions(policy):
    """With `max_forward_events=1` a long forward continues in non-decision calls (`obs.decision` False,
    action ignored, reward 0 until the forward ends); the decisions, what they see, their rewards and the
    final metrics are exactly those of the uncapped env."""
    capped_cfg = dataclasses.replace(CFG, max_forward_events=1)
    env = GPUCloudEnv(CFG)
    params = random_params(env, np.random.default_rng(11))
    _, _, full = rollout(CFG, params, policy=policy)
    _, _, capped = rollout(capped_cfg, params, policy=policy)
    assert full["terminated"].any() and capped["terminated"].any()
    n_full = int(np.argmax(full["terminated"])) + 1
    n_capped = int(np.argmax(capped["terminated"])) + 1
    decided = np.asarray(capped["info"]["decision"][:n_capped])
    assert (~decided).sum() > 0, "the cap never split a forward: the test exercises nothing"
    assert decided.sum() == n_full
    # The calls that end a forward return the observation of the next decision (or the terminal one).
    ends = np.asarray(capped["obs"].decision[:n_capped]) | np.asarray(capped["terminated"][:n_capped])
    assert ends.sum() == n_full
    np.testing.assert_allclose(capped["reward"][:n_capped][ends], full["reward"][:n_full], rtol=1e-6)
    assert np.all(capped["reward"][:n_capped][~ends] == 0.0)
    for name in ("jobs", "machines", "job_mask", "free"):
        np.testing.assert_array_equal(
            getattr(capped["obs"], name)[:n_capped][ends], getattr(full["obs"], name)[:n_full], err_msg=name
        )
    for k in METRIC_KEYS:
        np.testing.assert_allclose(
            capped["metrics"][k][n_capped - 1], full["metrics"][k][n_full - 1], rtol=1e-6
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jct_reward_sums_to_minus_average_jct(seed):
    """With `reward="jct"` an episode's rewards sum to −(Σ JCT)/(60·E) = −avg JCT in minutes, jobs that
    wait outside the (6-slot) pending list included — the reward is the JCT accrued, call by call."""
    env, _ = runner(CFG)
    params = random_params(env, np.random.default_rng(100 + seed), reward="jct")
    _, _, outs = rollout(CFG, params, jax.random.PRNGKey(seed), POLICIES.index("random"))
    end = int(np.argmax(outs["terminated"]))
    assert outs["terminated"][end], "the episode must end within T_STEPS"
    assert int(outs["info"]["finished"][: end + 1].sum()) == int(params.episode_jobs)
    # Jobs did wait outside the full list at some point (the case the reward's window is for).
    assert (outs["q_len"][: end + 1] == CFG.queue_capacity).any()
    total = float(outs["reward"][: end + 1].astype(np.float64).sum())
    avg_jct_min = float(outs["metrics"]["avg_jct_min"][end])
    np.testing.assert_allclose(total, -avg_jct_min, rtol=1e-4)
    assert (outs["reward"][: end + 1] <= 1e-6).all()  # time only accrues


def test_unknown_reward_is_rejected():
    env, _ = runner(CFG)
    with pytest.raises(ValueError, match="reward must be one of"):
        random_params(env, np.random.default_rng(0), reward="makespan")

"""Every GPU-cloud (DAS) heuristic equals a plain-Python version of it, job for job, in a closed loop.

The JAX side: `policies.gpu_cloud.make_heuristic` drives `GPUCloudEnv.step_env` — one compiled program for
every (workload, heuristic) pair (`vmap` over the workloads, `lax.switch` over the heuristics, `lax.scan`
over the decisions). The reference side: `ref_action` below, written from the definitions (the docstring of
`policies/gpu_cloud.py`, DAS paper §5.1.5), reads the reference simulator's queue, jobs and per-machine free
resources — not the JAX observation — in exact rational arithmetic, and drives `ReferenceGPUCloud`
(float64). Both must make the same decisions round by round: the same jobs start at the same times with the
same instances on the same machines, end at the same times, fail as often, and the metrics agree.

The definitions, for one scheduling round (free resources as at the start of the round):
  FIFO         earliest submission first
  DRF          smallest dominant share first: max over GPU/CPU/memory of C·demand_r / Σ_m cap_m,r
  FirstFit     machines in index order
  LoadBalance  the least-loaded machine first: mean over GPU/CPU/memory of used_m,r / cap_m,r
  Tetris       alignment(j, m) = Σ_r demand_r/cap_m,r · free_m,r/cap_m,r; a job's priority is its best
               alignment over the machines where one instance fits (-1 where none does), highest first;
               machines by alignment, highest first
  Ties: the lower slot (= earlier in the queue, the reference shows the whole queue) / machine index.

The workloads are small and tie-heavy on purpose: each draws its jobs from a catalogue of 3-6 shapes (so
many jobs have equal shares and alignments) with bursts of equal submit times, on 3 machines of mixed
capacity and speed. Every capacity and demand is a small multiple of a power of two per resource, so every
fraction the heuristics compare is exact in float32 (DRF's cluster totals excepted: their distinct shares
differ by far more than a float32 ulp); `_order` checks that distinct exact keys stay distinct in float32,
so a mismatch here is a rule, not rounding. φ = 1 (`fluct_std = 0`); speeds still differ by machine
(`perf`) and contention.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from reference.gpu_cloud import ReferenceGPUCloud

from jaxsched.envs.gpu_cloud.env import GPUCloudConfig, GPUCloudEnv
from jaxsched.policies.gpu_cloud import HEURISTICS, make_heuristic
from jaxsched.workloads.ddl import fits_empty_cluster, make_ddl_workload

KEY = jax.random.PRNGKey(0)  # the reset draws the only start; with N == Q no view is sampled; φ = 1
CFG = GPUCloudConfig(n_machines=3, n_slots=8, queue_capacity=8, max_running=6)
WORKLOADS = 100
BANK_JOBS = 32  # every bank has this many jobs, so every episode has the same shapes
MAX_E = 30  # jobs per episode: 15..30
T_STEPS = 3 * MAX_E + 2  # > placements (E) + forward events (2E): every episode ends within it
# Per resource (GPU 1/100, CPU 1/100 core, MiB): every capacity and demand is a multiple of a power-of-two
# fraction of the largest capacity, so used / cap, free / cap and their products are exact in float32.
MACHINE_TYPES = ((800, 9600, 131072), (400, 4800, 65536), (800, 4800, 65536), (400, 9600, 131072))
N_INST = (1, 1, 2, 2, 3, 4)
GPU = (100, 200, 400)
CPU = (0, 600, 1200, 2400, 4800)  # a zero demand does not constrain
MEM = (0, 8192, 16384, 32768, 65536)
METRIC_KEYS = ("avg_jct_min", "avg_fee", "avg_wait_min", "avg_duration_min", "finished", "failed",
               "gpu_util", "makespan_h", "steps")  # fmt: skip
# Times: float32 seconds in the env vs float64 in the reference (the episodes last up to ~3e4 s).
T_RTOL, T_ATOL = 1e-5, 1e-2
FEE_RTOL = 1e-4


# ---- the plain-Python heuristics ---------------------------------------------------------------------
def _order(keys: list) -> list[int]:
    """Indices by ascending exact key, ties to the lower index (the documented rule). Checks that distinct
    keys stay distinct in float32, i.e. that the float32 policy sees exactly these ties."""
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    for a, b in zip(order, order[1:], strict=False):
        if keys[a] != keys[b]:
            assert np.float32(float(keys[a])) != np.float32(float(keys[b])), (keys[a], keys[b])
    return order


def _scores(order: list[int], size: int) -> np.ndarray:
    """Distinct scores, highest first in `order`: `ReferenceGPUCloud.step` (descending) then follows
    `order` exactly, whatever its own tie rule."""
    out = np.zeros(size)
    out[order] = -np.arange(len(order), dtype=np.float64)
    return out


def _demand(job) -> tuple[int, int, int]:
    return job.gpu, job.cpu, job.mem


def _caps(ref: ReferenceGPUCloud) -> list[tuple[int, int, int]]:
    return [(ref.gpu_cap[m], ref.cpu_cap[m], ref.mem_cap[m]) for m in range(ref.M)]


def fifo_keys(ref, jobs) -> list:
    return [ref.submit[j.bank] for j in jobs]  # earliest submission first


def drf_keys(ref, jobs, share=max, with_c=True) -> list:
    """The dominant share (`share` and `with_c` exist only to count where a variant would differ)."""
    total = [sum(c[r] for c in _caps(ref)) for r in range(3)]
    return [share(Fraction((j.n_inst if with_c else 1) * d, total[r]) for r, d in enumerate(_demand(j)))
            for j in jobs]  # fmt: skip


def load_keys(ref, resources=(0, 1, 2)) -> list:
    """Mean used fraction per machine over `resources`, from the free resources now."""
    caps = _caps(ref)
    return [sum(Fraction(caps[m][r] - ref.free[m][r], caps[m][r]) for r in resources) / len(resources)
            for m in range(ref.M)]  # fmt: skip


def alignment(ref, job, m: int) -> Fraction:
    """Tetris: Σ_r demand_r / cap_m,r · free_m,r / cap_m,r."""
    cap = _caps(ref)[m]
    return sum(Fraction(d * ref.free[m][r], cap[r] ** 2) for r, d in enumerate(_demand(job)))


def one_fits(ref, job, m: int) -> bool:
    return all(ref.free[m][r] >= d for r, d in enumerate(_demand(job)))


def best_alignment(scores: list, fits: list) -> Fraction:
    """A Tetris job's priority: its best alignment over the machines that fit one instance, else -1."""
    return max((s for s, ok in zip(scores, fits, strict=True) if ok), default=Fraction(-1))


def ref_action(name: str, ref: ReferenceGPUCloud, seen: dict):
    """`(priority [N], affinity [N, M])` of heuristic `name` for the reference's current round (slot i
    shows queue position i), as distinct scores that encode the orders. `seen` counts what it exercised."""
    jobs = [ref.jobs[b] for b in ref.queue]
    n, m = ref.N, ref.M
    order_rule, _, place_rule = name.partition("_")
    align = fits = None
    if name == "tetris":
        align = [[alignment(ref, j, mm) for mm in range(m)] for j in jobs]
        fits = [[one_fits(ref, j, mm) for mm in range(m)] for j in jobs]
        job_keys = [-best_alignment(a, f) for a, f in zip(align, fits, strict=True)]
        machine_orders = [_order([-x for x in a]) for a in align]
    else:
        job_keys = fifo_keys(ref, jobs) if order_rule == "fifo" else drf_keys(ref, jobs)
        machines = list(range(m)) if place_rule == "firstfit" else _order(load_keys(ref))
        machine_orders = [machines] * len(jobs)
    job_order = _order(job_keys)
    count_round(name, ref, jobs, job_keys, job_order, align, fits, seen)
    affinity = np.zeros((n, m))
    for i, machines in enumerate(machine_orders):
        affinity[i] = _scores(machines, m)
    return _scores(job_order, n), affinity


def count_round(name, ref, jobs, job_keys, job_order, align, fits, seen):
    """Coverage: ties, and rounds where each mutant of the rule (planted in the JAX policy to prove this
    file's teeth) would order jobs or machines differently."""
    if len(jobs) >= 2:
        seen["rounds"] += 1
        live = [k for k in job_keys if name != "tetris" or k <= 0]  # Tetris: ties among jobs that fit
        seen["job_ties"] += len(set(live)) < len(live)
        if name.startswith("drf"):
            seen["drf_not_fifo"] += job_order != _order(fifo_keys(ref, jobs))
            seen["drf_sum_differs"] += job_order != _order(drf_keys(ref, jobs, share=sum))
            seen["drf_without_c_differs"] += job_order != _order(drf_keys(ref, jobs, with_c=False))
        if name == "tetris":
            seen["tetris_unfiltered_differs"] += job_order != _order([-max(a) for a in align])
    if name.endswith("loadbalance"):
        load = load_keys(ref)
        seen["machine_ties"] += len(set(load)) < len(load)
        seen["lb_not_firstfit"] += _order(load) != list(range(ref.M))
        seen["lb_gpu_only_differs"] += _order(load) != _order(load_keys(ref, resources=(0,)))
    if name == "tetris":
        seen["tetris_none_fits"] += sum(not any(f) for f in fits)
        seen["machine_ties"] += sum(len(set(a)) < len(a) for a in align)


# ---- workloads ----------------------------------------------------------------------------------------
def make_workload(seed: int) -> dict:
    """A random bank of `BANK_JOBS` jobs, an episode of 15-30 of them, 3 machines of mixed types, speeds
    and contention knobs; returns the env params and the host arrays the reference is built from."""
    rng = np.random.default_rng(seed)
    types = np.asarray(MACHINE_TYPES)[rng.integers(0, len(MACHINE_TYPES), CFG.n_machines)]
    caps = dict(gpu_cap=types[:, 0], cpu_cap=types[:, 1], mem_cap=types[:, 2])
    n_shapes = int(rng.integers(3, 7))
    shapes = np.stack([rng.choice(v, n_shapes) for v in (N_INST, GPU, CPU, MEM)], 1)
    shape = shapes[rng.integers(0, len(shapes), BANK_JOBS)]
    gaps = rng.choice([0, 0, 0, 0, 10, 60, 300, 900], BANK_JOBS)  # bursts of equal submit times
    cols = dict(
        submit=np.cumsum(gaps) + int(rng.integers(0, 1000)),
        n_inst=shape[:, 0],
        gpu=shape[:, 1],
        cpu=shape[:, 2],
        mem=shape[:, 3],
        work=rng.uniform(200.0, 4000.0, BANK_JOBS).astype(np.float32),
        model=rng.integers(0, 9, BANK_JOBS),
    )
    # A job whose C instances do not fit the empty cluster runs one (one fits every machine type).
    cols["n_inst"] = np.where(fits_empty_cluster(make_ddl_workload(**cols), **caps), cols["n_inst"], 1)
    bank = make_ddl_workload(**cols)
    e = int(rng.integers(15, MAX_E + 1))
    env = GPUCloudEnv(CFG)
    params = env.make_params(
        bank,
        starts=[int(rng.integers(0, BANK_JOBS - e + 1))],
        episode_jobs=e,
        machine=dict(gpu=800, cpu=9600, mem=131072),  # validation only: the real caps follow
        perf=rng.uniform(0.6, 1.4, CFG.n_machines),
        bw_cap=rng.uniform(0.5, 1.5, CFG.n_machines),
        fluct_std=0.0,
        model_comm=rng.uniform(0.0, 1.0, 9),
        kappa_net=float(rng.uniform(0.2, 1.5)),
        kappa_cpu=float(rng.uniform(0.1, 1.0)),
        kappa_spread=float(rng.uniform(0.05, 0.5)),
        load_scale=float(rng.choice([1.0, 2.0])),
    )
    params = params.replace(**{k: jnp.asarray(v, jnp.int32) for k, v in caps.items()})
    return {"params": params, "cols": cols, **caps}


def reference(wl: dict) -> ReferenceGPUCloud:
    p = wl["params"]
    f = lambda x: float(np.asarray(x))  # noqa: E731
    c = wl["cols"]
    return ReferenceGPUCloud(
        c["submit"], c["n_inst"], c["gpu"], c["cpu"], c["mem"], np.asarray(c["work"], np.float64), c["model"],
        start=int(np.asarray(p.starts)[0]), episode_jobs=int(p.episode_jobs),
        gpu_cap=wl["gpu_cap"], cpu_cap=wl["cpu_cap"], mem_cap=wl["mem_cap"],
        bw_cap=np.asarray(p.bw_cap, np.float64), perf=np.asarray(p.perf, np.float64),
        model_comm=np.asarray(p.model_comm, np.float64),
        kappa_net=f(p.kappa_net), kappa_cpu=f(p.kappa_cpu), kappa_spread=f(p.kappa_spread),
        price=f(p.price), alpha=f(p.alpha), jct_unit=f(p.jct_unit), load_scale=f(p.load_scale),
        n_slots=CFG.n_slots, queue_capacity=CFG.queue_capacity, max_running=CFG.max_running, phi=None,
        c_norm=f(p.c_norm), wait_norm=f(p.wait_norm), max_steps=int(p.max_steps),
    )  # fmt: skip


# ---- the two sides ------------------------------------------------------------------------------------
@functools.cache
def compiled():
    """`run(params [W], policy i32) -> (done [W], metrics, outs)`: the heuristic `HEURISTICS[policy]` on
    every workload, `T_STEPS` decisions each; steps after an episode ends leave its state as it was."""
    env = GPUCloudEnv(CFG)
    policies = [make_heuristic(h) for h in HEURISTICS]
    branches = [lambda obs, p=p: p(None, obs, KEY) for p in policies]  # the key: unused by these five

    def episode(params, policy):
        obs, state = env.reset_env(KEY, params)

        def body(carry, _):
            obs, state, over = carry
            action = lax.switch(policy, branches, obs)
            slot_job = jnp.where(state.view >= 0, state.q_rows[jnp.maximum(state.view, 0), 0], -1)
            obs2, state2, _, term, _, info = env.step_env(KEY, state, action, params)
            out = {"live": ~over, "t": state.t, "slot_job": slot_job}
            for k in ("placed_job", "placed_alloc", "finished_job", "finished_jct", "finished_fee"):
                out[k] = info[k]
            keep = lambda old, new: jnp.where(over, old, new)  # noqa: E731
            return (jax.tree.map(keep, obs, obs2), jax.tree.map(keep, state, state2), over | term), out

        (_, state, over), outs = lax.scan(body, (obs, state, jnp.bool_(False)), None, length=T_STEPS)
        return over, env.metrics(state, params), outs

    return jax.jit(jax.vmap(episode, in_axes=(0, None)))


@pytest.fixture(scope="module")
def workloads():
    return [make_workload(seed) for seed in range(WORKLOADS)]


@pytest.fixture(scope="module")
def jax_runs(workloads):
    """`{heuristic: (done [W], metrics, outs)}` as numpy."""
    params = jax.tree.map(lambda *xs: jnp.stack(xs), *[wl["params"] for wl in workloads])
    run = compiled()
    return {h: jax.device_get(run(params, jnp.int32(i))) for i, h in enumerate(HEURISTICS)}


@pytest.fixture(scope="module")
def ref_runs(workloads):
    """`{heuristic: ([(reference, rounds)] per workload, seen)}`; a round: `(t, {job: alloc}, failed)`."""
    out = {}
    for h in HEURISTICS:
        seen = dict.fromkeys(("rounds", "job_ties", "machine_ties", "drf_not_fifo", "drf_sum_differs",
                              "drf_without_c_differs", "lb_not_firstfit", "lb_gpu_only_differs",
                              "tetris_unfiltered_differs", "tetris_none_fits"), 0)  # fmt: skip
        runs = []
        for wl in workloads:
            ref = reference(wl)
            ref.reset()
            rounds = []
            for _ in range(T_STEPS):
                t = ref.t
                r = ref.step(*ref_action(h, ref, seen))
                placed = {b: [alloc.get(m, 0) for m in range(ref.M)] for b, alloc in r["placed"]}
                rounds.append((t, placed, sorted(r["failed"])))
                if r["terminated"]:
                    break
            else:
                raise AssertionError(f"{h}: a reference episode did not end in {T_STEPS} rounds")
            ref.check_invariants()
            runs.append((ref, rounds))
        out[h] = (runs, seen)
    return out


# ---- the tests ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_heuristic_equals_plain_python_version(heuristic, workloads, jax_runs, ref_runs):
    """Round by round (time, the jobs started and their instances per machine, the failed jobs), then job by
    job (start, machines and instances, end, JCT, fee, failed schedulings) and the episode metrics."""
    done, metrics, outs = jax_runs[heuristic]
    runs, _ = ref_runs[heuristic]
    for w, (ref, rounds) in enumerate(runs):
        where = f"{heuristic}, workload {w}"
        assert done[w], f"{where}: the JAX episode did not end in {T_STEPS} decisions"
        start, alloc, jct, fee, n_failed = {}, {}, {}, {}, {}
        for i, (t, placed, failed) in enumerate(rounds):
            at = f"{where}, round {i} (t = {t:.3f})"
            np.testing.assert_allclose(outs["t"][w, i], t, rtol=T_RTOL, atol=T_ATOL, err_msg=at)
            got = {int(b): outs["placed_alloc"][w, i, s].tolist()
                   for s, b in enumerate(outs["placed_job"][w, i]) if b >= 0}  # fmt: skip
            assert got == placed, f"{at}: JAX started {got}, the reference {placed}"
            slot_job, placed_job = outs["slot_job"][w, i], outs["placed_job"][w, i]
            got_failed = sorted(int(b) for b, p in zip(slot_job, placed_job, strict=True) if b >= 0 > p)
            assert got_failed == failed, f"{at}: JAX failed {got_failed}, the reference {failed}"
            for b in got:
                start[b], alloc[b] = float(outs["t"][w, i]), got[b]
            for b in got_failed:
                n_failed[b] = n_failed.get(b, 0) + 1
            for k, b in enumerate(outs["finished_job"][w, i]):
                if b >= 0:
                    jct[int(b)], fee[int(b)] = outs["finished_jct"][w, i, k], outs["finished_fee"][w, i, k]
        n_jax = outs["live"][w].sum()
        assert n_jax == len(rounds), f"{where}: {n_jax} JAX decisions, reference {len(rounds)}"
        assert sorted(jct) == sorted(ref.jobs) == sorted(start), f"{where}: not every job started and ended"
        for b, job in ref.jobs.items():
            at = f"{where}, job {b}"
            np.testing.assert_allclose(start[b], job.start, rtol=T_RTOL, atol=T_ATOL, err_msg=f"{at} start")
            assert alloc[b] == [job.alloc.get(m, 0) for m in range(ref.M)], f"{at}: alloc"
            end = job.arrival + float(jct[b])  # arrivals are exact: integer submits / load 1 or 2
            np.testing.assert_allclose(end, job.finish, rtol=T_RTOL, atol=T_ATOL, err_msg=f"{at} end")
            np.testing.assert_allclose(jct[b], job.jct, rtol=T_RTOL, atol=T_ATOL, err_msg=f"{at} JCT")
            np.testing.assert_allclose(fee[b], job.fee, rtol=FEE_RTOL, atol=1e-6, err_msg=f"{at} fee")
            assert n_failed.get(b, 0) == job.n_failed, f"{at}: failed schedulings"
        ref_m = ref.metrics()
        for k in METRIC_KEYS:
            np.testing.assert_allclose(metrics[k][w], ref_m[k], rtol=1e-4, atol=1e-6, err_msg=f"{where} {k}")


def schedule(ref) -> dict:
    return {b: (j.start, tuple(sorted(j.alloc.items()))) for b, j in ref.jobs.items()}


def test_the_workloads_exercise_every_rule(ref_runs):
    """The equality above means something: rounds with several jobs and ties in every heuristic's keys,
    orders and machine rankings that each planted mutant would change, jobs no machine fits, failed
    schedulings, jobs spread over machines, zero CPU or memory demands, and heuristics that schedule
    differently."""
    seen = {h: ref_runs[h][1] for h in HEURISTICS}
    for h, s in seen.items():
        assert s["rounds"] >= 1000 and s["job_ties"] >= 300, (h, s)
        runs = ref_runs[h][0]
        assert sum(ref.n_failed for ref, _ in runs) >= 1000, h
        spread = sum(len(j.alloc) > 1 for ref, _ in runs for j in ref.jobs.values())
        zero = sum(0 in (j.cpu, j.mem) for ref, _ in runs for j in ref.jobs.values())
        assert spread >= 100 and zero >= 100, (h, spread, zero)
    for h in ("drf_firstfit", "drf_loadbalance"):
        for k in ("drf_not_fifo", "drf_sum_differs", "drf_without_c_differs"):
            assert seen[h][k] >= 100, (h, k, seen[h])
    for h in ("fifo_loadbalance", "drf_loadbalance"):
        for k in ("machine_ties", "lb_not_firstfit", "lb_gpu_only_differs"):
            assert seen[h][k] >= 100, (h, k, seen[h])
    for k in ("machine_ties", "tetris_unfiltered_differs", "tetris_none_fits"):
        assert seen["tetris"][k] >= 50, (k, seen["tetris"])

    def n_differ(a, b):
        return sum(
            schedule(ra) != schedule(rb)
            for (ra, _), (rb, _) in zip(ref_runs[a][0], ref_runs[b][0], strict=True)
        )

    pairs = [("fifo_firstfit", "drf_firstfit"), ("fifo_firstfit", "fifo_loadbalance"),
             ("drf_firstfit", "drf_loadbalance"), ("fifo_firstfit", "tetris")]  # fmt: skip
    for a, b in pairs:
        assert n_differ(a, b) >= WORKLOADS // 2, (a, b, n_differ(a, b))

"""Every env against its own plain-Python reference, timed in one run: the figure the speed claims rest on.

    python benchmarks/reference_ratio.py --json docs/results/envs/reference_ratio_cpu.json
    python benchmarks/reference_ratio.py --env dag,dbf --batch 1024 --seconds 10

For each system's registered preset (`dbf`, `das-small`, `sced2`, `dag`, `osdec`, their embedded default
workloads): the JAX env's decisions/s at `--batch` envs under `jit(vmap)` + `lax.scan`, acting with the
env's `random` heuristic (`experiments.throughput.measure_env`: the median of `--repeats` timed runs after
a warm-up), and the decisions/s of the plain-Python reference the differential tests judge it by
(`tests/reference/`: Python lists and floats, float64), built on the same preset's params, one episode at
a time, random valid actions, a new episode (drawn from the same bank) whenever one ends: the median of
`--repeats` runs of `--seconds` each. The ratio is the JAX figure over the reference's, both measured in
this run on this machine.

A decision is what each paper's agent decides: a pick or a forward (DBF, SCED²), a scheduling round (DAS),
a stage and its limit (DAG), one time step's scores (OSDEC). Where the JAX env caps the work of one call
(`max_forward_events`, `max_events`), a call that only continues a forward is not a decision; the reference
runs each forward to the next decision in one call. Two references do more per decision than the env:
DAS's reference orders and places over its whole 64-job queue (it supports no narrower view), the env over
its 16 visible jobs.

Records: one per env {"env", "preset", "batch", "jax_decisions_per_s", "reference_decisions_per_s",
"ratio", "jax_env": measure_env's record, "reference_runs": [{"decisions", "seconds"}], ...platform}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

import jaxsched
from jaxsched.experiments.live import live
from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import measure_env, platform_info, random_action

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from reference.dag import RefDAGEnv  # noqa: E402
from reference.dag import random_valid_action as dag_random_action  # noqa: E402
from reference.deferrable import RefDeferrable  # noqa: E402
from reference.gpu_cloud import ReferenceGPUCloud  # noqa: E402
from reference.gpu_locality import RefGPULocality  # noqa: E402
from reference.hpc import RefHPC  # noqa: E402

PRESETS = {"dbf": "dbf", "das": "das-small", "sced2": "sced2", "dag": "dag", "osdec": "osdec"}


def _np(tree):
    return jax.tree.map(np.asarray, jax.device_get(tree))


class HPCPlayer:
    """`tests/reference/hpc.py` on the preset's bank: a random valid slot (or Fwd) each decision."""

    def __init__(self, env, params):
        cfg, p = env.config, _np(params)
        self.ref = RefHPC(
            cfg.n_cores, cfg.window_head, cfg.window_tail, cfg.queue_capacity, p.bank,
            episode_jobs=int(p.episode_jobs), max_steps=int(p.max_steps),
            w=(float(p.w1), float(p.w2), float(p.w3)), runtime_norm=float(p.runtime_norm),
            wait_norm=float(p.wait_norm),
        )  # fmt: skip
        self.starts, self.ends = p.starts, p.ends

    def reset(self, rng):
        e = int(rng.integers(len(self.starts)))
        self.mask = self.ref.reset(int(self.starts[e]), int(self.ends[e]))[1]

    def step(self, rng) -> bool:
        _, self.mask, _, terminated, truncated = self.ref.step(rng.choice(np.flatnonzero(self.mask)))
        return terminated or truncated


class GPUCloudPlayer:
    """`tests/reference/gpu_cloud.py` on the preset's bank and cluster: standard-normal priorities and
    affinities each round (the env's `random` heuristic), a random episode start and noise seed."""

    def __init__(self, env, params):
        self.cfg, self.p = env.config, _np(params)

    def reset(self, rng):
        p, cfg, b = self.p, self.cfg, self.p.bank
        f = float
        self.ref = ReferenceGPUCloud(
            b.submit, b.n_inst, b.gpu, b.cpu, b.mem, np.asarray(b.work, np.float64), b.model,
            start=int(p.starts[rng.integers(len(p.starts))]), episode_jobs=int(p.episode_jobs),
            gpu_cap=p.gpu_cap, cpu_cap=p.cpu_cap, mem_cap=p.mem_cap, bw_cap=np.asarray(p.bw_cap, np.float64),
            perf=np.asarray(p.perf, np.float64), model_comm=np.asarray(p.model_comm, np.float64),
            kappa_net=f(p.kappa_net), kappa_cpu=f(p.kappa_cpu), kappa_spread=f(p.kappa_spread),
            price=f(p.price), alpha=f(p.alpha), jct_unit=f(p.jct_unit), load_scale=f(p.load_scale),
            n_slots=cfg.queue_capacity, queue_capacity=cfg.queue_capacity, max_running=cfg.max_running,
            noise_seed=int(rng.integers(2**31)), fluct_std=f(p.fluct_std), c_norm=f(p.c_norm),
            wait_norm=f(p.wait_norm), max_steps=int(p.max_steps),
        )  # fmt: skip
        self.ref.reset()

    def step(self, rng) -> bool:
        n, m = self.cfg.queue_capacity, self.cfg.n_machines
        out = self.ref.step(rng.normal(size=n), rng.normal(size=(n, m)))
        return out["terminated"] or out["truncated"]


class GPULocalityPlayer:
    """`tests/reference/gpu_locality.py` on one of the preset's episodes: a random valid pick or φ."""

    def __init__(self, env, params):
        self.cfg, self.p = env.config, _np(params)

    def reset(self, rng):
        p, cfg = self.p, self.cfg
        e = int(rng.integers(len(p.starts)))
        rows = slice(int(p.starts[e]), int(p.ends[e]))
        jobs = {k: getattr(p, k)[rows] for k in ("submit", "gpus", "ideal", "model")}
        self.ref = RefGPULocality(
            cfg.n_servers, cfg.gpus_per_server, cfg.window, cfg.n_levels, cfg.auto_forward, jobs, p.slowdown,
            sensitive_ratio=float(p.sensitive_ratio), time_scale=float(p.time_scale),
            max_steps=int(p.max_steps), work_conserving=cfg.work_conserving,
        )  # fmt: skip
        self.ref.reset()

    def step(self, rng) -> bool:
        _, _, terminated, truncated = self.ref.step(rng.choice(np.flatnonzero(self.ref.mask())))
        return terminated or truncated


class DAGPlayer:
    """`tests/reference/dag.py` on one of the preset's episodes: a random runnable stage, limit and idle
    slot (`reference.dag.random_valid_action`, the same law as the env's `random` heuristic)."""

    def __init__(self, env, params):
        self.cfg, self.p = env.config, _np(params)
        if self.cfg.task_waves:
            raise ValueError("reference_ratio: the dag preset with task_waves needs the waves passed on")

    def reset(self, rng):
        p, cfg, b = self.p, self.cfg, self.p.bank
        e = int(rng.integers(len(b.n_jobs)))
        n = int(b.n_jobs[e])
        self.ref = RefDAGEnv(
            n_executors=cfg.n_executors, max_slots=cfg.max_slots, max_stages=cfg.max_stages,
            idle_levels=cfg.idle_levels, n_stages=b.n_stages, parents=b.parents, n_tasks=b.n_tasks,
            duration=b.duration, template=b.template[e, :n], arrival=b.arrival[e, :n],
            moving_delay=int(p.moving_delay), warmup_delay=int(p.warmup_delay),
            reward_scale=float(p.reward_scale), max_time=int(p.max_time),
        )  # fmt: skip
        self.snap = self.ref.reset()

    def step(self, rng) -> bool:
        self.snap, _, terminated, truncated = self.ref.step(*dag_random_action(self.snap, self.ref, rng))
        return terminated or truncated


class DeferrablePlayer:
    """`tests/reference/deferrable.py` on one of the preset's episodes: a standard-normal score for every
    pending job each time step (the env's `random` heuristic), `horizon` steps an episode."""

    def __init__(self, env, params):
        self.cfg, self.p = env.config, _np(params)

    def reset(self, rng):
        p, b = self.p, self.p.bank
        e = int(rng.integers(len(b.n_jobs)))
        n = int(b.n_jobs[e])
        jobs = {k: getattr(b, k)[e, :n] for k in ("cores", "duration", "earliest", "latest", "submit")}
        self.horizon = int(p.horizon)
        self.ref = RefDeferrable(
            jobs, b.capacity[e], self.horizon, self.cfg.pending_slots, w_delay=float(p.w_delay),
            w_violation=float(p.w_violation), defer_negative=self.cfg.defer_negative,
        )  # fmt: skip

    def step(self, rng) -> bool:
        self.ref.step({j: float(rng.normal()) for j in self.ref.pending})
        return self.ref.t >= self.horizon


PLAYERS = {"dbf": HPCPlayer, "das": GPUCloudPlayer, "sced2": GPULocalityPlayer, "dag": DAGPlayer,
           "osdec": DeferrablePlayer}  # fmt: skip


def reference_runs(player, seconds: float, repeats: int, seed: int = 0) -> list[dict]:
    """`repeats` runs of about `seconds` each: the decisions the reference made and the seconds they took
    (episode resets included, as the JAX env's auto-reset is)."""
    rng = np.random.default_rng(seed)
    player.reset(rng)
    runs = []
    for _ in range(repeats):
        decisions, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < seconds:
            for _ in range(64):  # check the clock every 64 decisions
                decisions += 1
                if player.step(rng):
                    player.reset(rng)
        runs.append({"decisions": decisions, "seconds": elapsed})
    return runs


def measure(system: str, batch: int, steps: int, repeats: int, seconds: float) -> dict:
    preset = PRESETS[system]
    with live(f"{system}: building the {preset} preset"):
        env, params = jaxsched.make(preset)
    jax_rec = measure_env(
        env, params, batch, steps, repeats, action_fn=random_action(env), warmup_steps=steps, progress=True
    )
    with live(f"{system}: the plain-Python reference, {repeats} runs of {seconds:g} s"):
        runs = reference_runs(PLAYERS[system](env, params), seconds, repeats)
    ref_rate = statistics.median(r["decisions"] / r["seconds"] for r in runs)
    return {
        "env": system, "preset": preset, "batch": batch,
        "jax_decisions_per_s": jax_rec["decisions_per_s"], "reference_decisions_per_s": ref_rate,
        "ratio": jax_rec["decisions_per_s"] / ref_rate, "jax_env": jax_rec, "reference_runs": runs,
        **platform_info(),
    }  # fmt: skip


def table(runs: list[list[dict]]) -> str:
    """The markdown table of one or more records files (runs of the same command): one row per system,
    each run's two rates and ratio side by side."""
    rows = [
        "| system (preset) | JAX decisions/s at batch 1,024, by run | reference decisions/s | ratio |",
        "|---|---|---|---|",
    ]
    for system in (r["env"] for r in runs[0]):
        recs = [next(r for r in run if r["env"] == system) for run in runs]
        cell = lambda key, fmt, recs=recs: " / ".join(f"{r[key]:{fmt}}" for r in recs)  # noqa: E731
        rows.append(
            f"| {system} (`{recs[0]['preset']}`) | {cell('jax_decisions_per_s', ',.0f')} | "
            f"{cell('reference_decisions_per_s', ',.0f')} | {cell('ratio', ',.0f')} |"
        )
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default=",".join(PRESETS), help=f"comma-separated, of {', '.join(PRESETS)}")
    p.add_argument("--batch", type=int, default=1024, help="parallel JAX envs")
    p.add_argument("--steps", type=int, default=256, help="JAX scan length per timed run")
    p.add_argument("--repeats", type=int, default=3, help="timed runs of each side (medians)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds per reference run")
    p.add_argument("--json", default=None, help="write the records here")
    p.add_argument(
        "--table", nargs="+", default=None, metavar="JSON",
        help="print records files (runs of this command) as one markdown table, and stop",
    )  # fmt: skip
    a = p.parse_args()
    if a.table:
        print(table([json.loads(Path(f).read_text()) for f in a.table]))
        return
    systems = a.env.split(",")
    unknown = sorted(set(systems) - set(PRESETS))
    if unknown:
        p.error(f"--env: unknown {', '.join(unknown)}; choose from {', '.join(PRESETS)}")
    records = []
    for system in systems:
        rec = measure(system, a.batch, a.steps, a.repeats, a.seconds)
        records.append(rec)
        print(
            f"{system:>6} ({rec['preset']}): JAX {rec['jax_decisions_per_s']:>12,.0f} decisions/s at batch "
            f"{a.batch:,}; reference {rec['reference_decisions_per_s']:>9,.0f}/s; "
            f"ratio {rec['ratio']:,.0f}×  "
            f"({rec['device']}, {rec['cpu']})",
            flush=True,
        )
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()

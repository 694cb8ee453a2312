"""The README's main job: classic heuristics in the Deep Back-Filling HPC env on a generated
Lublin–Feitelson workload (no download), as a table of the paper's metrics (mean ± std over episodes).
"""

from __future__ import annotations

import time

import jax

from jaxsched.envs.hpc import HPCConfig, HPCEnv
from jaxsched.experiments.evaluate import evaluate_policies, summarize
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.policies.hpc import heuristic_policies, random_valid_policy
from jaxsched.systems.dbf.metrics import HPC_METRICS
from jaxsched.workloads.lublin import LublinConfig, generate_bank


def run_demo(
    episodes: int = 8,
    episode_jobs: int = 256,
    n_cores: int = 256,
    seed: int = 0,
    json_path: str | None = None,
    window: int = 64,
) -> dict:
    """Heuristics (with and without EASY back-filling) and a random valid policy over `episodes`
    generated episodes; the window is head-only and large so heuristics see (almost) the whole queue."""
    t0 = time.perf_counter()
    key_bank, key_eval = jax.random.split(jax.random.key(seed))
    bank, starts, ends = generate_bank(
        key_bank, LublinConfig(n_nodes=n_cores, whole_sample=True), episodes, 2 * episode_jobs
    )
    env = HPCEnv(HPCConfig(n_cores=n_cores, window_head=window, window_tail=0, queue_capacity=512))
    params = env.make_params(bank, starts=starts, ends=ends, episode_jobs=episode_jobs)
    policies = heuristic_policies(env, ("fcfs", "lcfs", "sjf", "f1"))
    policies["random_valid"] = random_valid_policy(env)
    keys = jax.random.split(key_eval, episodes)
    print(
        f"evaluating {len(policies)} policies on {episodes} episodes (one compiled program) ...", flush=True
    )
    per_policy = evaluate_policies(env, params, policies, keys)
    rows = {name: summarize(m) for name, m in per_policy.items()}
    print(f"done in {time.perf_counter() - t0:.1f} s", flush=True)
    print_metric_table(
        rows,
        HPC_METRICS,
        title=f"HPC env, Lublin model, {n_cores} cores, {episodes} episodes × {episode_jobs} placed jobs",
    )
    overflow = {n: r["overflow"][0] for n, r in rows.items() if r["overflow"][0] > 0}
    if overflow:
        print(f"queue overflow (arrivals refused, mean per episode): {overflow}")
    if json_path:
        write_json(
            json_path, {n: {k: {"mean": m, "std": s} for k, (m, s) in r.items()} for n, r in rows.items()}
        )
    return rows

"""Environment throughput: env steps/s under `vmap` + `lax.scan`, random valid actions, auto-reset on.

Compile time and reset cost are measured apart from the steady-state step rate; each number is the
median of `repeats` timed runs after one warm-up (compile) run.
"""

from __future__ import annotations

import json
import statistics
import time

import jax
import jax.numpy as jnp

from jaxsched.envs.hpc import HPCConfig, HPCEnv
from jaxsched.workloads.lublin import LublinConfig, generate_bank


def default_hpc_setup(
    n_cores: int = 256,
    head: int = 9,
    tail: int = 1,
    episode_jobs: int = 1000,
    n_episodes: int = 16,
    seed: int = 0,
):
    """The DBF env (9 + 1 split window) over a generated Lublin bank: what the benchmark runs."""
    env = HPCEnv(HPCConfig(n_cores=n_cores, window_head=head, window_tail=tail))
    jobs_per_episode = 2 * episode_jobs
    bank, starts, ends = generate_bank(
        jax.random.key(seed), LublinConfig(n_nodes=n_cores, whole_sample=True), n_episodes, jobs_per_episode
    )
    params = env.make_params(bank, starts=starts, ends=ends, episode_jobs=episode_jobs)
    return env, params


def _time(fn, *args, repeats: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return first, times


def measure_env(env, params, batch: int, steps: int, repeats: int = 3, seed: int = 0) -> dict:
    """One record: steps/s (median), compile time, reset cost for `batch` parallel envs."""
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def rollout(key, obs, state):
        def body(carry, k):
            obs, state = carry
            k_act, k_step = jax.random.split(k)
            logits = jnp.where(obs.mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits)
            obs, state, reward, _, _, _ = step(jax.random.split(k_step, batch), state, action, params)
            return (obs, state), reward.sum()

        (obs, state), rewards = jax.lax.scan(body, (obs, state), jax.random.split(key, steps))
        return obs, state, rewards.sum()

    keys = jax.random.split(jax.random.key(seed), batch)
    reset_first, reset_times = _time(reset, keys, params, repeats=repeats)
    obs, state = reset(keys, params)
    first, times = _time(rollout, jax.random.key(seed + 1), obs, state, repeats=repeats)
    run = statistics.median(times)
    return {
        "env": env.name,
        "batch": batch,
        "steps": steps,
        "steps_per_s": batch * steps / run,
        "runs_s": times,
        "compile_s": max(first - run, 0.0),
        "reset_s": statistics.median(reset_times),
        "reset_compile_s": max(reset_first - statistics.median(reset_times), 0.0),
        "device": str(jax.devices()[0].device_kind),
        "platform": jax.default_backend(),
        "jax": jax.__version__,
    }


def env_throughput(
    batches=(1, 64, 1024, 4096),
    steps: int = 256,
    repeats: int = 3,
    json_path: str | None = None,
    env_setup=None,
) -> list[dict]:
    """Benchmark the HPC env at each batch size; print a table, optionally write JSON records."""
    env, params = (env_setup or default_hpc_setup)()
    records = []
    for batch in batches:
        rec = measure_env(env, params, batch, steps, repeats)
        records.append(rec)
        print(
            f"{rec['env']:>4} batch {batch:>6}: {rec['steps_per_s']:>12,.0f} steps/s  "
            f"compile {rec['compile_s']:.2f}s  reset {rec['reset_s'] * 1e3:.2f} ms/batch  "
            f"({rec['platform']})",
            flush=True,
        )
    if json_path:
        with open(json_path, "w") as f:
            json.dump(records, f, indent=2)
    return records

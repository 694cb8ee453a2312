"""Environment throughput: env steps/s under `vmap` + `lax.scan`, random valid actions, auto-reset on;
and training throughput: env steps/s *during PPO training* (env + network + update), `measure_train`.

Compile time and reset cost are measured apart from the steady-state step rate; each number is the
median of `repeats` timed runs after one warm-up (compile) run. Each record also has the env state's
bytes per env and the compiled rollout's working set (`experiments.footprint`).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp

from jaxsched.envs.registry import make
from jaxsched.experiments.footprint import (
    CAPACITIES,
    CAPACITY_LABELS,
    largest_batch,
    memory_line,
    program_bytes,
    tree_bytes,
)
from jaxsched.experiments.live import live


def default_hpc_setup(
    n_cores: int = 256,
    head: int = 9,
    tail: int = 1,
    episode_jobs: int = 1000,
    n_episodes: int = 16,
    seed: int = 0,
):
    """The DBF env (9 + 1 split window) over a generated Lublin bank: what the benchmark runs
    (`jaxsched.make("dbf")`)."""
    return make("dbf", n_cores=n_cores, window=head + tail, tail=tail, episode_jobs=episode_jobs,
                episodes=n_episodes, seed=seed)  # fmt: skip


def default_gpu_cloud_setup(
    size: str = "small",
    n_jobs: int = 20_000,
    episode_jobs: int = 1000,
    seed: int = 0,
    max_forward_events=None,
):
    """The DAS env (paper defaults: 16 visible jobs, 64-job pending list) on a cluster of `size` over a
    generated PAI-like bank with the generator's own defaults, not the calibrated presets' (`das-quick`'s
    spec at these sizes): what the GPU-cloud benchmark runs, as it did before calibration."""
    return make("das-quick", size=size, n_jobs=n_jobs, episode_jobs=episode_jobs, seed=seed,
                max_forward_events=max_forward_events)  # fmt: skip


def random_valid_action(key, obs):
    """HPC: a uniformly random valid slot (or Fwd)."""
    return jax.random.categorical(key, jnp.where(obs.mask, 0.0, -jnp.inf))


def random_action(env):
    """`action_fn(key, obs)` of `env`'s `random` heuristic (`policies.make_heuristic`): GPU cloud,
    standard-normal priorities and affinities; DAG, a runnable stage, a limit and an idle slot; …"""
    from jaxsched.policies import make_heuristic

    policy = make_heuristic(env, "random")
    return lambda key, obs: policy(None, obs, key)


def cpu_model() -> str:
    """The host CPU's model name (`/proc/cpuinfo`), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def platform_info() -> dict:
    """Where a record (or a table: `jaxsched table dag`) was measured: device, backend, CPU model."""
    return {
        "device": str(jax.devices()[0].device_kind),
        "platform": jax.default_backend(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
    }


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


def median_time(fn, *args, repeats: int = 3) -> float:
    """Median seconds of `repeats` calls of `fn(*args)`, after one untimed call (compile, warm-up)."""
    return statistics.median(_time(fn, *args, repeats=repeats)[1])


def random_rollout(env, params, batch: int, steps: int, action_fn=random_valid_action):
    """The loop the env benchmark times (and `benchmarks/profile_env_step.py` profiles): a jitted
    `rollout(key, obs, state) -> (obs, state, Σ reward, decisions, event times)` of `steps` steps of
    `batch` envs under `vmap` + `lax.scan`, each env taking `action_fn(key, obs)`; decisions count the
    steps whose `info["decision"]` is set (every step where the env has no such flag), event times sum
    `info["events"]` (0 where absent)."""
    act = jax.vmap(action_fn)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def rollout(key, obs, state):
        def body(carry, k):
            obs, state = carry
            k_act, k_step = jax.random.split(k)
            action = act(jax.random.split(k_act, batch), obs)
            obs, state, reward, _, _, info = step(jax.random.split(k_step, batch), state, action, params)
            decisions = info["decision"].sum() if "decision" in info else jnp.int32(batch)
            events = info["events"].sum() if "events" in info else jnp.int32(0)
            return (obs, state), (reward.sum(), decisions, events)

        (obs, state), (rewards, decisions, events) = jax.lax.scan(
            body, (obs, state), jax.random.split(key, steps)
        )
        return obs, state, rewards.sum(), decisions.sum(), events.sum()

    return rollout


def measure_env(
    env,
    params,
    batch: int,
    steps: int,
    repeats: int = 3,
    seed: int = 0,
    action_fn=random_valid_action,
    warmup_steps: int = 0,
    progress: bool = False,
) -> dict:
    """One record: steps/s (median), compile time, reset cost for `batch` parallel envs taking
    `action_fn(key, obs)` actions (one env's; vmapped here) in `random_rollout`'s loop. Timed runs start
    after `warmup_steps` steps from reset (so envs are past their episodes' first steps). Envs whose
    `info["decision"]` marks non-decision steps also get `decisions_per_s`, counting only the steps that
    used the action; envs whose `info["events"]` counts the event times a step processed also get
    `events_per_s`. `progress`: a live line (`experiments.live`) while it compiles and while it runs."""
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    rollout = random_rollout(env, params, batch, steps, action_fn)

    keys = jax.random.split(jax.random.key(seed), batch)
    with live(f"batch {batch}: compiling and timing reset", progress):
        reset_first, reset_times = _time(reset, keys, params, repeats=repeats)
        obs, state = reset(keys, params)
    t0 = time.perf_counter()
    with live(f"batch {batch}: compiling the {steps}-step rollout", progress):
        compiled = rollout.lower(jax.random.key(seed + 1), obs, state).compile()
    compile_s = time.perf_counter() - t0
    with live(f"batch {batch}: {repeats} timed runs of {steps} steps", progress):
        for i in range(-(-warmup_steps // steps)):
            obs, state, *_ = rollout(jax.random.fold_in(jax.random.key(seed + 2), i), obs, state)
        _, times = _time(rollout, jax.random.key(seed + 1), obs, state, repeats=repeats)
    run = statistics.median(times)
    _, _, _, decided, events = rollout(jax.random.key(seed + 1), obs, state)
    decided, events = int(decided), int(events)
    return {
        "env": env.name,
        "batch": batch,
        "steps": steps,
        "warmup_steps": warmup_steps,
        "steps_per_s": batch * steps / run,
        "decisions_per_s": decided / run,
        **({"events_per_s": events / run} if events else {}),
        "runs_s": times,
        "compile_s": compile_s,
        "reset_s": statistics.median(reset_times),
        "reset_compile_s": max(reset_first - statistics.median(reset_times), 0.0),
        "state_bytes_per_env": tree_bytes(state) / batch,
        "rollout_working_bytes": program_bytes(compiled)["working_bytes"],
        **platform_info(),
    }


def env_throughput(
    batches=(1, 64, 1024, 4096),
    steps: int = 256,
    repeats: int = 3,
    json_path: str | None = None,
    env_setup=None,
    action_fn=random_valid_action,
    warmup_steps: int = 0,
    progress: bool = True,
) -> list[dict]:
    """Benchmark an env (default the HPC env) at each batch size; print a table, optionally write JSON.
    `progress`: live lines while the env builds, each batch compiles and its timed runs run."""
    with live("building the env and its workload", progress):
        env, params = (env_setup or default_hpc_setup)()
    records = []
    for batch in batches:
        rec = measure_env(env, params, batch, steps, repeats, action_fn=action_fn, warmup_steps=warmup_steps,
                          progress=progress)  # fmt: skip
        records.append(rec)
        print(
            f"{rec['env']:>9} batch {batch:>6}: {rec['steps_per_s']:>12,.0f} steps/s "
            f"({rec['decisions_per_s']:,.0f} decisions/s)  "
            f"compile {rec['compile_s']:.2f}s  reset {rec['reset_s'] * 1e3:.2f} ms/batch  "
            f"({rec['platform']})",
            flush=True,
        )
    if len(records) >= 2:
        print(memory_summary(records), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(records, f, indent=2)
    return records


def memory_summary(records: list[dict]) -> str:
    """One line: the rollout program's working set as a line through the two largest batches measured
    (`experiments.footprint.memory_line`), and the largest batch that fits each of `CAPACITIES` by it."""
    small, large = sorted(records, key=lambda r: r["batch"])[-2:]
    fixed, per_env = memory_line(
        (small["batch"], small["rollout_working_bytes"]), (large["batch"], large["rollout_working_bytes"])
    )
    head = f"{large['env']:>9} memory: state {large['state_bytes_per_env'] / 1024:,.1f} KiB/env; the rollout"
    if per_env <= 0:  # tiny batches: XLA's buffers need not grow with the batch
        span = f"{small['batch']:,} to {large['batch']:,}"
        return f"{head} program does not grow from batch {span}: measure larger batches"
    fits = ", ".join(
        f"{largest_batch(fixed, per_env, c):,} in {CAPACITY_LABELS[name]}" for name, c in CAPACITIES.items()
    )
    line = f"{per_env / 1024:,.1f} KiB/env + {fixed / 2**20:,.1f} MiB ({large['platform']}'s program)"
    return f"{head} program {line}: fits {fits}"


def measure_train(
    env,
    params,
    hidden=(64, 64),
    seeds: int = 1,
    num_envs: int = 64,
    num_steps: int = 64,
    updates: int = 4,
    repeats: int = 3,
    minibatch_size: int = 128,
    update_epochs: int = 4,
    seed: int = 0,
    **ppo_overrides,
) -> dict:
    """One record: PPO training throughput with `seeds` runs `vmap`ped in one program.

    The timed unit is one jitted chunk of `updates` PPO updates (`PPO.train_chunk`: rollouts of
    `num_envs` × `num_steps` decisions, GAE, `update_epochs` epochs of minibatches of `minibatch_size`),
    run once to compile and warm up, then `repeats` times; each run continues from the previous one's
    state. `env_steps_per_s` and `updates_per_s` count every seed (`seeds × num_envs × num_steps ×
    updates` env steps per chunk). Other `PPOConfig` fields can be set through `ppo_overrides`.
    """
    from jaxsched.agents.ppo import PPO, PPOConfig  # lazy: keeps `jaxsched bench` free of the RL stack

    n = num_envs * num_steps
    if n % minibatch_size:
        raise ValueError(f"minibatch_size ({minibatch_size}) must divide num_envs × num_steps ({n})")
    config = PPOConfig(
        **{
            "num_envs": num_envs,
            "num_steps": num_steps,
            "total_updates": updates,
            "updates_per_chunk": updates,
            "update_epochs": update_epochs,
            "num_minibatches": n // minibatch_size,
            "hidden": tuple(hidden),
            **ppo_overrides,
        }
    )
    ppo = PPO(config, env, params)
    runner = jax.jit(jax.vmap(ppo.init))(jax.random.split(jax.random.key(seed), seeds))
    chunk = jax.jit(jax.vmap(ppo.train_chunk))
    first, times = _time(chunk, runner, repeats=repeats)  # every run does the same chunk of updates
    run = statistics.median(times)
    return {
        "agent": "ppo",
        "env": env.name,
        "n_cores": getattr(env.config, "n_cores", None),
        "window": [getattr(env.config, "window_head", None), getattr(env.config, "window_tail", None)],
        "hidden": list(config.hidden),
        "seeds": seeds,
        "num_envs": num_envs,
        "num_steps": num_steps,
        "updates": updates,
        "update_epochs": config.update_epochs,
        "minibatch_size": config.minibatch_size,
        "env_steps_per_s": seeds * updates * n / run,
        "updates_per_s": seeds * updates / run,
        "runs_s": times,
        "compile_s": max(first - run, 0.0),
        **platform_info(),
    }


def train_throughput(
    hiddens=((1024, 512, 256), (64, 64)),
    seeds=(1, 8),
    num_envs: int = 64,
    num_steps: int = 64,
    updates: int = 2,
    repeats: int = 3,
    minibatch_size: int = 128,
    update_epochs: int = 4,
    json_path: str | None = None,
    env_setup=None,
) -> list[dict]:
    """Benchmark PPO training on the DBF env for each network and seed count; print, optionally write JSON."""
    env, params = (env_setup or default_hpc_setup)()
    records = []
    for hidden in hiddens:
        for s in seeds:
            rec = measure_train(
                env, params, hidden, s, num_envs, num_steps, updates, repeats, minibatch_size, update_epochs
            )
            records.append(rec)
            print(
                f"ppo {str(rec['hidden']):>18} seeds {s:>3}: {rec['env_steps_per_s']:>10,.0f} env steps/s"
                f"  {rec['updates_per_s']:>7.2f} updates/s  compile {rec['compile_s']:.1f}s"
                f"  ({rec['platform']})",
                flush=True,
            )
    if json_path:
        with open(json_path, "w") as f:
            json.dump(records, f, indent=2)
    return records


def measure_mappo(
    env, params, agent, label: str, seeds: int = 1, num_envs: int = 16, num_steps: int = 64,
    updates: int = 2, repeats: int = 3, seed: int = 0, **mappo_overrides,
) -> dict:  # fmt: skip
    """One record: MAPPO training throughput of the multi-agent actor `agent` (named `label` in the
    record) on `env`, `seeds` vmapped: env calls/s and decisions/s during training (rollout + update)."""
    from jaxsched.agents.mappo import MAPPO, MAPPOConfig

    cfg = MAPPOConfig(
        num_envs=num_envs, num_steps=num_steps, total_updates=updates, updates_per_chunk=updates,
        **mappo_overrides,
    )  # fmt: skip
    mappo = MAPPO(cfg, env, params, agent)
    runner = jax.jit(jax.vmap(mappo.init))(jax.random.split(jax.random.key(seed), seeds))
    chunk = jax.jit(jax.vmap(mappo.train_chunk))
    first, times = _time(chunk, runner, repeats=repeats)
    run = statistics.median(times)
    _, metrics = chunk(runner)
    decision_frac = float(jnp.mean(metrics["decision_frac"]))
    calls = seeds * updates * num_envs * num_steps
    return {
        "agent": f"mappo_{label}",
        "env": env.name,
        "n_machines": env.config.n_machines,
        "seeds": seeds,
        "num_envs": num_envs,
        "num_steps": num_steps,
        "updates": updates,
        "env_steps_per_s": calls / run,
        "decisions_per_s": calls * decision_frac / run,
        "updates_per_s": seeds * updates / run,
        "runs_s": times,
        "compile_s": max(first - run, 0.0),
        **platform_info(),
    }


def measure_chunks(
    init, chunk, keys, params, steps_per_chunk: int, repeats: int = 3, warmup: int = 1
) -> dict:
    """Training throughput of any chunked trainer (`experiments.train` programs: `init(keys, params)`,
    `chunk(runner, params) -> (runner, metrics)`, seeds on the leading axis): `warmup` chunks (compile,
    and e.g. fill a replay buffer past its learning start), then `repeats` timed chunks, each continuing
    from the last. `env_steps_per_s` counts every seed (`steps_per_chunk` is one seed's)."""
    runner = init(keys, params)
    t0 = time.perf_counter()
    for _ in range(warmup):
        runner, _ = chunk(runner, params)
    jax.block_until_ready(runner)
    warm = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        runner, _ = chunk(runner, params)
        jax.block_until_ready(runner)
        times.append(time.perf_counter() - t0)
    run = statistics.median(times)
    seeds = int(keys.shape[0])
    return {"seeds": seeds, "env_steps_per_s": seeds * steps_per_chunk / run, "chunk_s": run, "runs_s": times,
            "warmup_s": warm, **platform_info()}  # fmt: skip

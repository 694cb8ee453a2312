"""Steps/s of the Gymnasium vector env (`jaxsched.adapters.gymnasium.GymnasiumVectorEnv`) against the native
batched step, measured in one run on the same machine and the same policy.

    python benchmarks/gymnasium_vector.py --json docs/results/adapters/gymnasium_vector.json
    python benchmarks/gymnasium_vector.py --envs dbf-quick --batch 4096 --steps 128

Both sides play `--batch` copies of each registered env with one deterministic policy of the action mask
(`Discrete`: the first valid action; `MultiDiscrete`: the first valid choice of the first entry, 0 for the
others; `Box` scores and DAS's priorities/affinities: zeros), so they run the same steps:
- *native*: `lax.scan` over `--steps` steps of the jitted, vmapped `env.step`, the policy on the device and
  every observation field read (a sum, as any agent reads its input; XLA would drop the fields nobody
  reads, and the vector env has to compute them all) — the loop a JAX agent runs;
- *gymnasium*: `--steps` calls of `GymnasiumVectorEnv.step` from Python, the policy in numpy on the
  `info["action_mask"]` each call returns: one jitted call and one device → host copy of the observation,
  rewards, ends and mask per step, the numpy action copied back — what a Gymnasium agent pays.

Records: {"env", "batch", "steps", "native_steps_per_s", "gymnasium_steps_per_s", "ratio" (gymnasium ÷
native), "runs_s" of each (median of --repeats), "compile_s" of each, "device", ...}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsched
from jaxsched.adapters.gymnasium import GymnasiumVectorEnv
from jaxsched.core.spaces import Discrete, MultiDiscrete, describe, is_space
from jaxsched.experiments.live import live
from jaxsched.experiments.throughput import platform_info

DEFAULT_ENVS = ("dbf-quick", "sced2-quick", "das-quick", "dag-quick", "osdec-quick")


def mask_policies(space):
    """`(jax_policy(mask) -> action, numpy_policy(masks [B, ...]) -> actions [B, ...])`: the same
    deterministic choice, one env on the device and a batch on the host (module docstring)."""
    if isinstance(space, Discrete):
        return (lambda m: jnp.argmax(m).astype(jnp.int32)), (lambda m: np.argmax(m, axis=1).astype(np.int32))
    if isinstance(space, MultiDiscrete):
        rest = len(space.nvec) - 1

        def one(m):
            return jnp.concatenate([jnp.argmax(m)[None], jnp.zeros(rest, jnp.int32)]).astype(jnp.int32)

        def batch(m):
            return np.concatenate([np.argmax(m, axis=1)[:, None], np.zeros((len(m), rest), int)], 1).astype(
                np.int32
            )

        return one, batch
    leaves = jax.tree.leaves(space, is_leaf=is_space)
    paths = [field for field, *_ in describe(space)]

    def zeros(m):
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), space, is_leaf=is_space)

    def batch_zeros(m):
        arrays = [np.zeros((len(m), *s.shape), np.dtype(s.dtype)) for s in leaves]
        return arrays[0] if is_space(space) else dict(zip(paths, arrays, strict=True))

    return zeros, batch_zeros


def read(obs) -> jax.Array:
    """A sum over every field of a batch of observations: what any agent does (it reads its input), so the
    native loop computes the whole observation, as the vector env must (XLA drops what nobody reads)."""
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(obs))


def native_rollout(env, params, batch: int, steps: int, policy):
    """Jitted `rollout(key, obs, state) -> (obs, state, Σ reward + Σ read(obs))`: `steps` steps of `batch`
    envs under vmap + scan, each step's observation read."""
    step = jax.vmap(env.step, (0, 0, 0, None))
    masks = jax.vmap(env.action_mask, (0, None))

    @jax.jit
    def rollout(key, obs, state):
        def body(carry, k):
            obs, state = carry
            action = jax.vmap(policy)(masks(state, params))
            obs, state, reward, *_ = step(jax.random.split(k, batch), state, action, params)
            return (obs, state), reward.sum() + read(obs)

        (obs, state), rewards = jax.lax.scan(body, (obs, state), jax.random.split(key, steps))
        return obs, state, rewards.sum()

    return rollout


def measure(name: str, batch: int, steps: int, repeats: int) -> dict:
    env, params = jaxsched.make(name)
    jax_policy, np_policy = mask_policies(env.action_space(params))

    # native: compile, then the median of `repeats` timed scans (each continuing the last's state)
    rollout = native_rollout(env, params, batch, steps, jax_policy)
    obs, state = jax.jit(jax.vmap(env.reset, (0, None)))(jax.random.split(jax.random.key(0), batch), params)
    t0 = time.perf_counter()
    with live(f"{name}: compiling the native {steps}-step rollout at batch {batch}"):
        obs, state, _ = jax.block_until_ready(rollout(jax.random.key(1), obs, state))
    native_compile = time.perf_counter() - t0
    native_runs = []
    for i in range(repeats):
        t0 = time.perf_counter()
        obs, state, _ = jax.block_until_ready(rollout(jax.random.key(2 + i), obs, state))
        native_runs.append(time.perf_counter() - t0)

    # gymnasium: the first reset + step compile; then `repeats` timed loops of `steps` steps
    venv = GymnasiumVectorEnv(env, batch, params)
    t0 = time.perf_counter()
    with live(f"{name}: compiling the vector env's reset and step at batch {batch}"):
        _, info = venv.reset(seed=0)
        _, _, _, _, info = venv.step(np_policy(info["action_mask"]))
    gym_compile = time.perf_counter() - t0
    gym_runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            _, _, _, _, info = venv.step(np_policy(info["action_mask"]))
        gym_runs.append(time.perf_counter() - t0)

    native, gym = batch * steps / statistics.median(native_runs), batch * steps / statistics.median(gym_runs)
    return {
        "env": name,
        "batch": batch,
        "steps": steps,
        "native_steps_per_s": native,
        "gymnasium_steps_per_s": gym,
        "ratio": gym / native,
        "native_runs_s": native_runs,
        "gymnasium_runs_s": gym_runs,
        "native_compile_s": native_compile,
        "gymnasium_compile_s": gym_compile,
        **platform_info(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=",".join(DEFAULT_ENVS), help="registered names, comma-separated")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the records here")
    args = parser.parse_args()
    records = []
    for name in args.envs.split(","):
        rec = measure(name, args.batch, args.steps, args.repeats)
        records.append(rec)
        print(
            f"{name:>12} batch {rec['batch']}: native {rec['native_steps_per_s']:>12,.0f} steps/s  "
            f"gymnasium {rec['gymnasium_steps_per_s']:>12,.0f} steps/s  ratio {rec['ratio']:.2f}  "
            f"({rec['device']}, {rec.get('cpu', '')})",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "command": "python benchmarks/gymnasium_vector.py "
                    + " ".join(f"--{k} {v}" for k, v in vars(args).items() if v is not None),
                    "records": records,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()

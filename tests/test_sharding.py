"""Seeds spread over devices (`experiments.sharding`): on 8 simulated CPU devices, a sharded rollout, a
sharded PPO training chunk and a whole sharded training run equal the unsharded ones for the same keys.

The devices are simulated with `XLA_FLAGS=--xla_force_host_platform_device_count=8`, which must be set
before JAX starts, so the check runs in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxsched.experiments.sharding import seed_sharding

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import jaxsched
    from jaxsched.experiments.sharding import seed_sharding, shard_seeds
    from jaxsched.experiments.train import read_metrics
    from jaxsched.policies import make_heuristic
    from jaxsched.systems.dbf.config import build_run, dbf_config_from_dict
    from jaxsched.experiments.learner import train_learner
    from jaxsched.systems.dbf.train import AGENT, LEARNER, programs

    out = {"devices": jax.device_count()}
    tiny = {"num_seeds": 8, "env": {"n_cores": 16, "window": 4, "tail": 1, "queue_capacity": 32,
            "episode_jobs": 16},
            "workload": {"train_episodes": 4, "test_episodes": 2, "jobs_per_episode": 40},
            "eval": {"episodes": 2},
            "ppo": {"hidden": [8], "num_envs": 4, "num_steps": 8, "num_minibatches": 2, "update_epochs": 1,
            "total_updates": 4, "updates_per_chunk": 2}}
    cfg = dbf_config_from_dict({**tiny, "out_dir": sys.argv[1]})

    # a rollout of 8 envs, the env batch sharded over the devices
    env, params = jaxsched.make("dbf-quick", n_cores=16, episode_jobs=8, episodes=2, queue_capacity=32)
    policy = make_heuristic(env, "random")
    def rollout(key):
        obs, state = env.reset(key, params)
        def body(c, k):
            obs, state = c
            ka, ks = jax.random.split(k)
            obs, state, reward, *_ = env.step(ks, state, policy(None, obs, ka), params)
            return (obs, state), reward
        return jax.lax.scan(body, (obs, state), jax.random.split(key, 40))[1]
    keys = jax.random.split(jax.random.key(1), 8)
    run = jax.jit(jax.vmap(rollout))
    plain, sharded = run(keys), run(shard_seeds(keys, seed_sharding(8)))
    out["rollout_devices"] = len(sharded.sharding.device_set)
    out["rollout_equal"] = bool(np.array_equal(np.asarray(plain), np.asarray(sharded)))

    # one PPO training chunk of 8 seeds
    env, train, _, ppo = build_run(cfg)
    init, chunk = programs(ppo, env)
    r0 = init(jax.random.split(jax.random.key(0), 8), train)
    one, m1 = chunk(shard_seeds(r0, seed_sharding(8, 1)), train)
    many, m8 = chunk(shard_seeds(r0, seed_sharding(8, 8)), train)
    out["chunk_devices"] = len(jax.tree.leaves(many.params)[0].sharding.device_set)
    out["chunk_max_diff"] = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                                for a, b in zip(jax.tree.leaves(one.params), jax.tree.leaves(many.params)))

    # whole runs through the shared trainer (checkpoints included), on 8 devices and on 1
    runs = {}
    for d in (8, 1):
        train_learner(LEARNER, cfg.replace(name=f"d{d}"), AGENT, progress=False, devices=d)
        runs[d] = [{k: v for k, v in r.items() if k != "wall_s"} for r in read_metrics(f"{sys.argv[1]}/d{d}")]
    # Not bitwise: the partitioned program sums in another order (chunk_max_diff), so compare every
    # metric with |a - b| <= 1e-5 + 1e-4 |b| (worst ratio <= 1); integer counts must agree exactly.
    def excess(a, b):
        if isinstance(a, list):
            return max([excess(x, y) for x, y in zip(a, b)] or [0.0])
        if a is None or b is None:
            return 0.0 if a is b else float("inf")
        if isinstance(a, int) and isinstance(b, int):
            return 0.0 if a == b else float("inf")
        return abs(a - b) / (1e-5 + 1e-4 * max(abs(a), abs(b)))
    out["runs_same_keys"] = [list(r) for r in runs[8]] == [list(r) for r in runs[1]]
    out["runs_worst"] = max((excess(r8[k], r1[k]), k) for r8, r1 in zip(runs[8], runs[1]) for k in r8)
    out["run_updates"] = len(runs[8])
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow
def test_sharded_rollout_chunk_and_run_equal_unsharded_on_8_cpu_devices(tmp_path):
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8".strip()
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, cwd=root, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    assert out["devices"] == 8 and out["rollout_devices"] == 8 and out["chunk_devices"] == 8, out
    assert out["rollout_equal"], out
    assert out["chunk_max_diff"] < 1e-6, out
    assert out["runs_same_keys"] and out["run_updates"] == 4, out
    assert out["runs_worst"][0] <= 1.0, out


def test_seed_sharding_errors_name_the_numbers():
    assert len(seed_sharding(3).device_set) == 1  # one device here: the placement of before
    with pytest.raises(ValueError, match="devices must be in 1..1"):
        seed_sharding(4, 2)

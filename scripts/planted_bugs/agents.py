"""The shared learning layer's planted bugs (agents/pg.py, ppo.py, mappo.py, dqn.py), for
`scripts/planted_bugs.py` (docs/testing.md, "Planted bugs"). Each names the agent tests that should catch
it: the hand cases and the learning tests of the algorithm the line belongs to."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

PG = "jaxsched/agents/pg.py"
PPO = "jaxsched/agents/ppo.py"
MAPPO = "jaxsched/agents/mappo.py"
DQN = "jaxsched/agents/dqn.py"
T_PG = "tests/test_pg.py tests/test_ppo.py tests/test_mappo.py tests/test_imitation.py"
T_PPO = "tests/test_pg.py tests/test_ppo.py tests/test_osdec_agent.py"
T_MAPPO = "tests/test_mappo.py"
T_DQN = "tests/test_dqn.py"

BUGS = [
    # ---- pg.py: the pieces PPO and MAPPO share
    (
        "G1",
        PG,
        "return jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)",
        "return jnp.maximum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)",
        T_PG,
    ),
    (
        "G2",
        PG,
        "return jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)",
        "return jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps))",
        T_PG,
    ),
    (
        "G3",
        PG,
        "return 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()",
        "return 0.5 * jnp.minimum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()",
        T_PG,
    ),
    (
        "G4",
        PG,
        "v_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)",
        "v_clipped = value + jnp.clip(value - old_value, -clip_eps, clip_eps)",
        T_PG,
    ),
    (
        "G5",
        PG,
        "return (adv - adv.mean()) / (adv.std() + 1e-8)",
        "return adv / (adv.std() + 1e-8)",
        T_PG,
    ),
    ("G6", PG, "n = jnp.maximum(weight.sum(), 1.0)", "n = jnp.float32(weight.size)", T_PG),
    (
        "G7",
        PG,
        "return (ratio - 1) - jnp.log(ratio), (jnp.abs(ratio - 1) > clip_eps).astype(jnp.float32)",
        "return -jnp.log(ratio), (jnp.abs(ratio - 1) > clip_eps).astype(jnp.float32)",
        T_PG,
    ),
    (
        "G8",
        PG,
        "std = jnp.sqrt(jnp.maximum(stats[2] / w - mean**2, 1e-4))",
        "std = jnp.sqrt(jnp.maximum(stats[2] / w, 1e-4))",
        T_PG,
    ),
    (
        "G9",
        PG,
        "perm = jax.random.permutation(k, n).reshape(num_minibatches, n // num_minibatches)",
        "perm = jnp.arange(n).reshape(num_minibatches, n // num_minibatches)",
        T_PG,
    ),
    (
        "G10",
        PG,
        'metrics["episode_return"] = episode_mean(log["episode_return"], done)',
        'metrics["episode_return"] = log["episode_return"].mean()',
        T_PG,
    ),
    # ---- ppo.py
    (
        "P1",
        PPO,
        "total = actor + hp.vf_coef * critic - hp.ent_coef * entropy",
        "total = actor + hp.vf_coef * critic + hp.ent_coef * entropy",
        T_PPO,
    ),
    (
        "P2",
        PPO,
        "next_value=jnp.where(terminated, 0.0, v_final),",
        "next_value=jnp.where(done, 0.0, v_final),",
        T_PPO,
    ),
    (
        "P3",
        PPO,
        "return hp.lr * (1.0 - (count // per_update) / cfg.total_updates)",
        "return hp.lr * (1.0 - count / cfg.total_updates)",
        T_PPO,
    ),
    ("P4", PPO, 'log["raw_vec"] = obs.vec', 'log["raw_vec"] = seen.vec', T_PPO),
    (
        "P5",
        PPO,
        "nxt = jnp.concatenate([traj.aux_target[1:], last], axis=0)",
        "nxt = traj.aux_target",
        T_PPO,
    ),
    ("P6", PPO, "traj = traj.replace(aux_target=nxt, aux_valid=~traj.done)", "traj = traj.replace(aux_target=nxt, aux_valid=jnp.ones_like(traj.done))", T_PPO),
    (
        "P7",
        PPO,
        "actor = -clipped_surrogate(ratio, normalize_advantages(adv), hp.clip_eps).mean()",
        "actor = -clipped_surrogate(ratio, adv, hp.clip_eps).mean()",
        T_PPO,
    ),
    ("P8", PPO, "log_ratio = log_prob - batch.log_prob", "log_ratio = batch.log_prob - log_prob", T_PPO),
    # ---- mappo.py
    (
        "M1",
        MAPPO,
        "per_agent = lambda x: ((x * d[:, None]).sum(axis=0) * learns).sum() / n  # noqa: E731",
        "per_agent = lambda x: (x * d[:, None]).sum(axis=0).sum() / n  # noqa: E731",
        T_MAPPO,
    ),
    ("M2", MAPPO, "entropy = (ent * d).sum() / n", "entropy = ent.mean()", T_MAPPO),
    (
        "M3",
        MAPPO,
        "old, targets = (batch.value - mean) / std, (targets - mean) / std",
        "old, targets = batch.value, (targets - mean) / std",
        T_MAPPO,
    ),
    # ---- dqn.py
    (
        "Q1",
        DQN,
        "frac = jnp.clip(update / (cfg.eps_decay_frac * cfg.total_updates), 0.0, 1.0)",
        "frac = jnp.clip(update / cfg.total_updates, 0.0, 1.0)",
        T_DQN,
    ),
    (
        "Q2",
        DQN,
        "return cfg.beta_start + jnp.clip(update / cfg.total_updates, 0.0, 1.0) * (1.0 - cfg.beta_start)",
        "return cfg.beta_start + jnp.float32(0.0) * (1.0 - cfg.beta_start)",
        T_DQN,
    ),
    ("Q3", DQN, "return w / w.max()", "return w / w.min()", T_DQN),
    (
        "Q4",
        DQN,
        "size = jnp.where(runner.buffer.is_full, cfg.buffer_size, runner.buffer.current_index) * cfg.num_envs",
        "size = jnp.where(runner.buffer.is_full, cfg.buffer_size, runner.buffer.current_index)",
        T_DQN,
    ),
]

EQUIVALENT = {
    "Q4": "the importance weights are divided by their maximum, so the buffer size's factor (N·P)^-β cancels",
}

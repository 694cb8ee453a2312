"""SCED²'s planted bugs (the GPU-locality env and its baselines), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

ENV = "jaxsched/envs/gpu_locality/env.py"
POLICIES = "jaxsched/policies/gpu_locality.py"
T_ENV = "tests/test_gpu_locality_env.py"

BUGS = [
    (
        "L1",
        ENV,
        "e = ideal.astype(jnp.float32) / (wait + actual).astype(jnp.float32)",
        "e = ideal.astype(jnp.float32) / actual.astype(jnp.float32)",
        T_ENV,
    ),
    (
        "L2",
        ENV,
        "level = jnp.minimum(servers - min_servers(g, cfg.gpus_per_server), cfg.n_levels - 1)",
        "level = jnp.minimum(servers - 1, cfg.n_levels - 1)",
        T_ENV,
    ),
    (
        "L3",
        ENV,
        "reused = multi & best & jnp.all(jnp.where(gpus_taken, state.gpu_multi, True))",
        "reused = multi & best & jnp.any(jnp.where(gpus_taken, state.gpu_multi, False))",
        T_ENV,
    ),
    (
        "L4",
        ENV,
        "(params.slowdown[model, min(1, cfg.n_levels - 1)] >= params.sensitive_ratio)",
        "(params.slowdown[model, min(1, cfg.n_levels - 1)] > params.sensitive_ratio)",
        T_ENV,
    ),
    ("L5", ENV, "shift = idx >= slot", "shift = idx > slot", T_ENV),
    (
        "L6",
        ENV,
        "relaxed=state.relaxed + (onehot & multi & ~best).astype(jnp.int32)",
        "relaxed=state.relaxed + (onehot & ~best).astype(jnp.int32)",
        T_ENV,
    ),
    (
        "L7",
        ENV,
        "win_passed=state.win_passed + (fits & moves).astype(jnp.int32)",
        "win_passed=state.win_passed + moves.astype(jnp.int32)",
        T_ENV,
    ),
    (
        "L8",
        ENV,
        "area_busy=state.area_busy + dt * busy.astype(jnp.float32)",
        "area_busy=state.area_busy + busy.astype(jnp.float32)",
        T_ENV,
    ),
    (
        "L9",
        ENV,
        "new = (idx >= state.win_len) & (job < state.next_job)",
        "new = (idx >= state.win_len) & (job <= state.next_job)",
        T_ENV,
    ),
    (
        "L10",
        ENV,
        "return present & (g <= cluster.num_free(state.gpu_end.reshape(-1), state.t))",
        "return present & (g < cluster.num_free(state.gpu_end.reshape(-1), state.t))",
        T_ENV,
    ),
    ("L11", ENV, "            phi = phi & ~fits.any()\n", "            phi = phi\n", T_ENV),
    (
        "L12",
        ENV,
        "jnp.log1p(per(state.t * count - rng(params.cum_submit)) / ts),",
        "jnp.log1p(per(rng(params.cum_submit)) / ts),",
        T_ENV,
    ),
    (
        "L13",
        ENV,
        "forwards=state.forwards + (valid & ~pick).astype(jnp.int32)",
        "forwards=state.forwards + (~pick).astype(jnp.int32)",
        T_ENV,
    ),
    (
        "L14",
        ENV,
        "truncated = (state.steps >= params.max_steps) & ~terminated",
        "truncated = (state.steps > params.max_steps) & ~terminated",
        T_ENV,
    ),
    (
        "L15",
        ENV,
        '"makespan": (state.max_end - state.t0).astype(jnp.float32),',
        '"makespan": (state.t - state.t0).astype(jnp.float32),',
        T_ENV,
    ),
    (
        "L16",
        ENV,
        "wait = zero(state.t - params.submit[job])",
        "wait = zero(state.t - params.submit[job] + 1)",
        T_ENV,
    ),
    (
        "L17",
        POLICIES,
        "eligible = eligible & ((level_now(env, obs) == 0) | (obs.passed >= DSIF_MAX_DELAYS))",
        "eligible = eligible & ((level_now(env, obs) == 0) | (obs.passed > DSIF_MAX_DELAYS))",
        T_ENV,
    ),
    (
        "L18",
        POLICIES,
        "return obs.gpus.astype(jnp.float32) * obs.ideal.astype(jnp.float32)",
        "return obs.gpus.astype(jnp.float32) + obs.ideal.astype(jnp.float32)",
        T_ENV,
    ),
    (
        "L19",
        POLICIES,
        "return jnp.clip(servers - min_servers(obs.gpus, cfg.gpus_per_server), 0, cfg.n_levels - 1)",
        "return jnp.clip(servers - 1, 0, cfg.n_levels - 1)",
        T_ENV,
    ),
    (
        "L20",
        POLICIES,
        "return jnp.where(eligible.any(), best, phi).astype(jnp.int32)",
        "return best.astype(jnp.int32)",
        T_ENV,
    ),
]

EQUIVALENT = {
    "L6": "a 1-GPU job is always at its best level (one server is the minimum), so it is never relaxed anyway",
}

"""Deep Back-Filling's planted bugs (the HPC env and its heuristics), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

ENV = "jaxsched/envs/hpc/env.py"
POLICIES = "jaxsched/policies/hpc.py"
T_ENV = "tests/test_hpc_env.py"
T_HEUR = "tests/test_hpc_heuristics_reference.py tests/test_hpc_policies.py"

BUGS = [
    (
        "D1",
        ENV,
        "fits = present & (cores <= free)\n\n        action",
        "fits = present & (cores < free)\n\n        action",
        T_ENV,
    ),
    (
        "D2",
        ENV,
        "eta = busy.astype(jnp.float32) / cfg.n_cores",
        "eta = free.astype(jnp.float32) / cfg.n_cores",
        T_ENV,
    ),
    (
        "D3",
        ENV,
        "ratio_w = jnp.where(state.w_max > 0, state.w_now / jnp.maximum(state.w_max, 1e-9), 0.0)",
        "ratio_w = jnp.where(state.w_max > 0, state.w_now / jnp.maximum(state.w_max, 1.0), 0.0)",
        T_ENV,
    ),
    (
        "D4",
        ENV,
        "t_next = jnp.where(forward & (t_next < cluster.NEVER), t_next, t)",
        "t_next = jnp.where(t_next < cluster.NEVER, t_next, t)",
        T_ENV,
    ),
    (
        "D5",
        ENV,
        "admit = forward & has_arrival & (t_arrival <= t_next)",
        "admit = forward & has_arrival & (t_arrival < t_next)",
        T_ENV,
    ),
    (
        "D6",
        ENV,
        "wideint.scale(t_next - t, jnp.where(forward, state.q_len, 0))",
        "wideint.scale(t_next - t, state.q_len)",
        T_ENV,
    ),
    ("D7", ENV, "l_max=jnp.maximum(state.l_max, l_new),", "l_max=jnp.maximum(state.l_max, l_now),", T_ENV),
    (
        "D8",
        ENV,
        "job_load=state.job_load + dt * state.q_load,",
        "job_load=state.job_load + dt * q_load,",
        T_ENV,
    ),
    (
        "D9",
        ENV,
        "area_queue=state.area_queue + dt * l_now,",
        "area_queue=state.area_queue + dt * l_new,",
        T_ENV,
    ),
    (
        "D10",
        ENV,
        "invalid=state.invalid + (is_pick & ~place).astype(jnp.int32),",
        "invalid=state.invalid + (~place).astype(jnp.int32),",
        T_ENV,
    ),
    (
        "D11",
        ENV,
        "terminated = (new_state.placed >= params.episode_jobs) | exhausted",
        "terminated = new_state.placed >= params.episode_jobs",
        T_ENV,
    ),
    (
        "D12",
        ENV,
        "wait = jnp.where(present, t - submit, 0).astype(jnp.float32)",
        "wait = jnp.where(present, t - submit, 1).astype(jnp.float32)",
        T_ENV,
    ),
    (
        "D13",
        ENV,
        "rate = jnp.sum(jnp.where(queued, 1.0 / jnp.maximum(run_q, 10.0), 0.0))",
        "rate = jnp.sum(jnp.where(queued, 1.0 / jnp.maximum(run_q, 1.0), 0.0))",
        T_ENV,
    ),
    (
        "D14",
        ENV,
        "q_load = jnp.where(q_len > 0, state.q_load - placed_f * picked_load + load_in, 0.0)",
        "q_load = jnp.where(q_len > 0, state.q_load + load_in, 0.0)",
        T_ENV,
    ),
    (
        "D15",
        ENV,
        '"avg_wait": per_job(state.sum_wait + state.w_now, arrived),',
        '"avg_wait": per_job(state.sum_wait, state.placed),',
        T_ENV,
    ),
    ("D16", ENV, "l_max=jnp.float32(1.0),", "l_max=jnp.float32(0.0),", T_ENV),
    ("D17", ENV, "max_steps = 50 * episode_jobs + 1000", "max_steps = episode_jobs", T_ENV),
    (
        "D18",
        POLICIES,
        "can_fill = fits & (obs.t + obs.req_time < shadow)",
        "can_fill = fits & (obs.t + obs.req_time <= shadow)",
        T_HEUR,
    ),
    (
        "D19",
        POLICIES,
        "shadow = cluster.earliest_start(obs.t + obs.sigma, obs.t, obs.cores[best_c])",
        "shadow = cluster.earliest_start(obs.t + obs.sigma, obs.t, obs.cores[best_c] - 1)",
        T_HEUR,
    ),
    (
        "D20",
        POLICIES,
        "fill = best_index(obs.submit.astype(jnp.float32), obs.submit, can_fill)",
        "fill = best_index(-obs.submit.astype(jnp.float32), obs.submit, can_fill)",
        T_HEUR,
    ),
]

EQUIVALENT = {
    "D3": "W(t) is a sum of whole seconds: a positive running maximum is >= 1, so a floor of 1 or 1e-9 agrees",
    "D6": "a pick does not move time (t_next = t), so L · (t_next − t) is 0 with or without the mask",
}

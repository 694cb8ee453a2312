"""DAS's planted bugs (the GPU-cloud env), for `scripts/planted_bugs.py` (docs/testing.md, "Planted bugs").

Not listed: a job ending exactly at the next event time not finishing there (`end < t_new` for
`end <= t_new`), which leaves the forward loop at the same time forever — a hang, named by pytest's
`faulthandler_timeout`.
"""

# ruff: noqa: E501  (the replaced lines are quoted whole)

ENV = "jaxsched/envs/gpu_cloud/env.py"
T_ENV = "tests/test_gpu_cloud_env.py"

BUGS = [
    (
        "A2",
        ENV,
        "fee = params.price * s.run_gpus * duration / 3600.0",
        "fee = params.price * duration / 3600.0",
        T_ENV,
    ),
    (
        "A3",
        ENV,
        "sum_wait=s.sum_wait + jnp.where(done, s.run_start - s.run_arrival, 0.0).sum(),",
        "sum_wait=s.sum_wait + jnp.where(done, t_new - s.run_arrival, 0.0).sum(),",
        T_ENV,
    ),
    (
        "A4",
        ENV,
        "ok = vis & (fit.sum() >= c) & (n_started < n_free_slots)",
        "ok = vis & (fit.sum() >= c)",
        T_ENV,
    ),
    ("A5", ENV, "take = jnp.clip(c - placed_before, 0, fit) * ok", "take = jnp.clip(c, 0, fit) * ok", T_ENV),
    (
        "A6",
        ENV,
        "before = rank[:, :, None] < rank[:, None, :]  # [N, M, M]",
        "before = rank[:, :, None] > rank[:, None, :]  # [N, M, M]",
        T_ENV,
    ),
    (
        "A7",
        ENV,
        "fin_term = jnp.where(done, 1.0 / (fin_fee * fin_jct / params.jct_unit), 0.0).sum()",
        "fin_term = jnp.where(done, 1.0 / (fin_jct / params.jct_unit), 0.0).sum()",
        T_ENV,
    ),
    ("A8", ENV, "eq3_term = fin_term - params.alpha * fail_gpus.sum()", "eq3_term = fin_term", T_ENV),
    (
        "A9",
        ENV,
        "acc_events = state.acc_events + done.sum() + failed.sum()",
        "acc_events = state.acc_events + done.sum()",
        T_ENV,
    ),
    (
        "A10",
        ENV,
        "truncated = ~terminated & (state.steps >= params.max_steps)",
        "truncated = ~terminated & (state.steps > params.max_steps)",
        T_ENV,
    ),
    (
        "A11",
        ENV,
        '"gpu_util": state.gpu_seconds / jnp.maximum(total_gpus * state.last_finish, 1e-6),',
        '"gpu_util": state.gpu_seconds / jnp.maximum(state.last_finish, 1e-6),',
        T_ENV,
    ),
    (
        "A13",
        ENV,
        "out = (idx < state.end_job) & (arrival <= state.t)",
        "out = (idx < state.end_job) & (arrival < state.t)",
        T_ENV,
    ),
    (
        "A14",
        "jaxsched/envs/gpu_cloud/obs.py",
        "n_waiting = jnp.maximum(q_len + n_outside, 1).astype(jnp.float32)",
        "n_waiting = jnp.maximum(q_len, 1).astype(jnp.float32)",
        T_ENV,
    ),
    (
        "A15",
        ENV,
        "running = (state.run_job >= 0).mean()",
        "running = (state.run_job >= 0).sum()",
        T_ENV,
    ),
    (
        "A16",
        "jaxsched/envs/gpu_cloud/obs.py",
        "return jnp.concatenate([jobs.reshape(-1), mask.astype(jnp.float32), machines.reshape(-1), load])",
        "return jnp.concatenate([jobs.reshape(-1), (~mask).astype(jnp.float32), machines.reshape(-1), load])",
        T_ENV,
    ),
    (
        "A12",
        ENV,
        "jct_term = -accrued / (params.jct_unit * params.episode_jobs.astype(jnp.float32))",
        "jct_term = -accrued / params.jct_unit",
        T_ENV,
    ),
]

"""The idle-slot DAG system's planted bugs, for `scripts/planted_bugs.py` (docs/testing.md, "Planted bugs").

Each is a realistic one-line slip in the env, its baselines, the network, the policy gradient, the
workloads, the loader or the experiment layer; the tests named beside it must fail. Not listed: swapping
the order of a dispatch's own and other idle executors' ranks (`_dispatch`'s `rank`), which dispatches
more executors than a stage has tasks and leaves the uncapped event loop running forever — a hang, not a
failure (pytest's `faulthandler_timeout` names the test).
"""

# ruff: noqa: E501  (the replaced lines are quoted whole)

ENV = "jaxsched/envs/dag/env.py"
POLICIES = "jaxsched/policies/dag.py"
NET = "jaxsched/nn/idle_dag.py"
GNN = "jaxsched/nn/gnn.py"
PG = "jaxsched/agents/reinforce.py"
BANK = "jaxsched/workloads/dag_bank.py"
TPCH = "jaxsched/workloads/tpch.py"
WAVES = "jaxsched/envs/dag/waves.py"
GEN = "jaxsched/workloads/dag_gen.py"
PARAMS = "jaxsched/envs/dag/params.py"
CONFIG = "jaxsched/systems/dag/config.py"
EVALUATE = "jaxsched/systems/dag/evaluation.py"
TABLE = "jaxsched/systems/dag/table.py"

T_ENV = "tests/test_dag_env.py tests/test_reference_dag.py"
T_AGENT = "tests/test_idle_dag_agent.py -k 'not beats_random'"
T_ENV_WORKLOADS = "tests/test_dag_env.py tests/test_dag_workloads.py"
T_WORKLOADS = "tests/test_dag_workloads.py"
T_WAVES = "tests/test_dag_env.py tests/test_reference_dag.py tests/test_dag_workloads.py"
T_SYSTEM = "tests/test_dag_system.py tests/test_dag_table.py"

BUGS = [
    ("E1", ENV, "return r * q + (r * m) // g", "return r * q + (r * m + g - 1) // g", T_ENV),
    (
        "E2",
        ENV,
        "jnp.maximum(_floor_mul_div(r, length, cfg.idle_levels), 1)",
        "jnp.maximum(_floor_mul_div(r, length, cfg.idle_levels), 0)",
        T_ENV,
    ),
    (
        "E3",
        ENV,
        "return valid & parents_done & spare & (state.hold_until <= state.t)",
        "return valid & parents_done & spare & (state.hold_until < state.t)",
        T_ENV,
    ),
    ("E4", ENV, "limit_ok = (a_limit >= bound)", "limit_ok = (a_limit >= bound - 1)", T_ENV),
    ("E5", ENV, "((r > 0) & (r <= cfg.idle_levels) & idle_ok)", "((r > 0) & (r <= cfg.idle_levels))", T_ENV),
    (
        "E7",
        ENV,
        "moves = chosen & cls2 & (params.moving_delay > 0)",
        "moves = chosen & (params.moving_delay > 0)",
        T_ENV,
    ),
    ("E8", ENV, "fresh = ~((state.ex_job == jid) & state.ex_warm)", "fresh = ~(state.ex_job == jid)", T_ENV),
    (
        "E9",
        ENV,
        "jump = jax.lax.div(left, jnp.maximum(n, 1)) * d",
        "jump = jax.lax.div(left + 1, jnp.maximum(n, 1)) * d",
        T_ENV,
    ),
    (
        "E10",
        ENV,
        "jnp.maximum(-((state.ex_until + w - t_next) // d), 1)",
        "jnp.maximum(-((state.ex_until - t_next) // d), 1)",
        T_ENV,
    ),
    ("E11", ENV, "gets = (comp | alive) & (rank < left)", "gets = (comp | alive) & (rank <= left)", T_ENV),
    ("E12", ENV, "(timers_ended & active) | admitted", "(timers_ended & active)", T_ENV),
    (
        "E13",
        ENV,
        "waited = take & (b.arrival[state.ep, jobc] < state.t)",
        "waited = take & (b.arrival[state.ep, jobc] <= state.t)",
        T_ENV,
    ),
    ("E14", ENV, "n_sys = (st.next_arr - st.n_finished)", "n_sys = (st.next_admit - st.n_finished)", T_ENV),
    (
        "E15",
        ENV,
        "timer = jnp.where(busy_through & (others < params.max_time), INF_MS, timer)",
        "timer = jnp.where(busy_through, INF_MS, timer)",
        T_ENV,
    ),
    (
        "E16",
        ENV,
        "state.idle_total / jnp.maximum(dly, 1.0)",
        "state.idle_total / jnp.maximum(sel, 1.0)",
        T_ENV,
    ),
    ("E17", ENV, "count(first) + count(late & below)", "count(late & below)", T_ENV),
    ("E18", ENV, "p - self._bound_of(state, j))", "p - self._bound_of(state, j) + 1)", T_ENV),
    ("E19", ENV, "hit_max = t_next >= params.max_time", "hit_max = t_next > params.max_time", T_ENV),
    (
        "E20",
        ENV,
        '(self.layout.flag("delayed") | self.layout.flag("touched"))',
        'self.layout.flag("delayed")',
        T_ENV,
    ),
    ("E21", ENV, "idling = jnp.where(any_open, each, last)", "idling = last", T_ENV),
    (
        "E22",
        ENV,
        "newly_done = valid & all_done & ~self._bits(state.fin_bits)",
        "newly_done = valid & all_done",
        T_ENV,
    ),
    ("E23", ENV, "live = in_move & (state.slot_job[k_slot] == state.ex_job)", "live = in_move", T_ENV),
    (
        "E24",
        ENV,
        "ex_warm=jnp.where(starts, True, jnp.where(moves, False, state.ex_warm))",
        "ex_warm=jnp.where(starts, True, state.ex_warm)",
        T_ENV,
    ),
    (
        "E25",
        ENV,
        "parents_done = (parents & ~state.fin_bits[:, None]) == 0",
        "parents_done = (parents & state.fin_bits[:, None]) == 0",
        T_ENV,
    ),
    (
        "H1",
        POLICIES,
        "jnp.lexsort((_arrival_rank(obs), jnp.where(obs.job_valid, obs.work, jnp.inf)))",
        "jnp.lexsort((jnp.where(obs.job_valid, obs.work, jnp.inf), _arrival_rank(obs)))",
        T_ENV,
    ),
    ("H2", POLICIES, "arrival, -bottom))", "arrival, bottom))", T_ENV),
    (
        "H3",
        POLICIES,
        "cap = -(-k // jnp.maximum(unstarted.sum(), 1))",
        "cap = k // jnp.maximum(unstarted.sum(), 1)",
        T_ENV,
    ),
    ("H4", POLICIES, "under = runnable & (obs.bound < cap)", "under = runnable & (obs.bound <= cap)", T_ENV),
    (
        "H5",
        POLICIES,
        "limit = lo + _uniform_below(u[1], k + 1 - lo)",
        "limit = lo + _uniform_below(u[1], k - lo)",
        T_ENV,
    ),
    (
        "H6",
        POLICIES,
        "stage = jnp.argmax(runnable[j])",
        "stage = s - 1 - jnp.argmax(runnable[j][::-1])",
        T_ENV,
    ),
    (
        "H7",
        POLICIES,
        "limit = jnp.where(ok, cap, obs.bound[j_any] + 1)",
        "limit = jnp.where(ok, cap, k)",
        T_ENV,
    ),
    ("N1", NET, "(obs.idle_ok[a_stage] & self.idle)", "obs.idle_ok[a_stage]", T_AGENT),
    (
        "N2",
        NET,
        "limit_ok = jnp.arange(1, cfg.n_executors + 1) >= obs.limit_min[j]",
        "limit_ok = jnp.arange(1, cfg.n_executors + 1) > obs.limit_min[j]",
        T_AGENT,
    ),
    ("N3", NET, "jnp.log1p(rem_work.sum(axis=-1))", "jnp.log1p(rem_work.max(axis=-1))", T_AGENT),
    ("N4", NET, "REPLACED_JOB_INPUTS = (1, 2)", "REPLACED_JOB_INPUTS = (0, 1)", T_AGENT),
    (
        "N5",
        NET,
        "_entropy(stage) + _entropy(limit) + _entropy(idle)",
        "_entropy(stage) + _entropy(limit)",
        T_AGENT,
    ),
    (
        "N6",
        NET,
        "jnp.stack([jnp.log1p(obs.crit), jnp.log1p(obs.width)], axis=-1)",
        "jnp.stack([jnp.log1p(obs.width), jnp.log1p(obs.crit)], axis=-1)",
        T_AGENT,
    ),
    (
        "N7",
        NET,
        'per_job = job_x if features != "add" else',
        'per_job = job_x if features == "none" else',
        T_AGENT,
    ),
    (
        "G1",
        GNN,
        "at = (height == lv)[..., None] & valid[..., None]",
        "at = (height >= lv)[..., None] & valid[..., None]",
        T_AGENT,
    ),
    ("G2", GNN, "job = job * job_valid[..., None].astype(x.dtype)", "job = job", T_AGENT),
    ("R1", PG, 'side="left"', 'side="right"', T_AGENT),
    (
        "R2",
        PG,
        'togo = jnp.flip(jnp.cumsum(jnp.flip(traj["reward"], 0), 0), 0)',
        'togo = jnp.cumsum(traj["reward"], 0)',
        T_AGENT,
    ),
    (
        "R3",
        PG,
        "valid = start + jnp.arange(chunk) < n_dec",
        "valid = start + jnp.arange(chunk) <= n_dec",
        T_AGENT,
    ),
    (
        "R4",
        PG,
        "return c.ent_start + frac * (c.ent_end - c.ent_start)",
        "return c.ent_start + 0 * frac",
        T_AGENT,
    ),
    (
        "R5",
        PG,
        "(c.curriculum_end_s / c.curriculum_start_s) ** frac",
        "(c.curriculum_end_s / c.curriculum_start_s) ** (1 - frac)",
        T_AGENT,
    ),
    ("R6", PG, "reward=reward * alive,", "reward=reward,", T_AGENT),
    ("R7", PG, "decision=decision & alive)", "decision=decision)", T_AGENT),
    (
        "R8",
        PG,
        "pg = -jnp.sum(jnp.where(valid, logp * weight[idx], 0.0)) / n",
        "pg = jnp.sum(jnp.where(valid, logp * weight[idx], 0.0)) / n",
        T_AGENT,
    ),
    (
        "F1",
        BANK,
        "bottom[i, v] = length[i, v] + (bottom[i, kids].max()",
        "bottom[i, v] = length[i, v] + (bottom[i, kids].min()",
        T_ENV_WORKLOADS,
    ),
    ("F2", BANK, "width=work / crit", "width=work / crit.mean()", T_ENV_WORKLOADS),
    (
        "L1",
        TPCH,
        "obj = _ALLOWED.get((module, name))",
        "obj = _ALLOWED.get((module, name)) or getattr(__import__(module), name, None)",
        T_WORKLOADS,
    ),
    (
        "L2",
        TPCH,
        "if not allow_pickle and _is_pickle(dur_path):",
        "if False and _is_pickle(dur_path):",
        T_WORKLOADS,
    ),
    ("L3", TPCH, 'if encoding not in ("latin1", "latin-1"):', "if False:", T_WORKLOADS),
    ("W1", WAVES, "col = jnp.where(rand_pt <= n - lo,", "col = jnp.where(rand_pt < n - lo,", T_WAVES),
    ("W2", WAVES, "warm = fresh & (kind == FIRST)", "warm = fresh", T_WAVES),
    ("W3", WAVES, "jnp.where(same_stage & (c_rest > 0), REST,", "jnp.where(c_rest > 0, REST,", T_WAVES),
    (
        "W4",
        WAVES,
        "col = jnp.where(waves.present[tmpl, stage, col], col, waves.largest[tmpl, stage])",
        "col = col",
        T_WAVES,
    ),
    (
        "W5",
        WAVES,
        "value = jnp.where(size > 0, value, waves.fallback[tmpl, stage])",
        "value = value",
        T_WAVES,
    ),
    (
        "S1",
        GEN,
        "long_len = long_len_s + long_std_frac * long_len_s * rng.standard_normal(n)",
        "long_len = long_len_s + long_std_frac * rng.standard_normal(n)",
        T_WORKLOADS,
    ),
    ("S2", GEN, "        gaps[:, 0] = 0.0\n", "        pass\n", T_WORKLOADS),
    (
        "S3",
        GEN,
        "gaps = rng.exponential(mean_gap_ms, (n_episodes, n_stream)).astype(np.int64)",
        "gaps = np.rint(rng.exponential(mean_gap_ms, (n_episodes, n_stream))).astype(np.int64)",
        T_WORKLOADS,
    ),
    (
        "S4",
        GEN,
        "return float(mean_work_ms) / (n_executors * load)",
        "return float(mean_work_ms) * load / n_executors",
        T_WORKLOADS,
    ),
    (
        "S5",
        GEN,
        "mean = alpha * syn_mean + (1.0 - alpha) * _work(pool).mean()",
        "mean = syn_mean",
        T_WORKLOADS,
    ),
    (
        "S6",
        GEN,
        "synth = rng.random((n_episodes, n_jobs)) < alpha",
        "synth = rng.random((n_episodes, n_jobs)) > alpha",
        T_WORKLOADS,
    ),
    (
        "S7",
        GEN,
        "adj = np.triu(rng.random((k, k)) < 0.5, 1)",
        "adj = np.triu(rng.random((k, k)) < 0.5, 0)",
        T_WORKLOADS,
    ),
    ("B1", BANK, "(duration < 1))", "(duration < 0))", "tests/test_dag_workloads.py tests/test_dag_env.py"),
    (
        "B2",
        BANK,
        "bad = np.flatnonzero(n_tasks < 1)",
        "bad = np.flatnonzero(n_tasks < 0)",
        "tests/test_dag_workloads.py tests/test_dag_env.py",
    ),
    (
        "B3",
        BANK,
        "bad = np.flatnonzero(np.diff(ar) < 0)",
        "bad = np.flatnonzero(np.diff(ar) < -1)",
        "tests/test_dag_workloads.py tests/test_dag_env.py tests/test_inputs.py",
    ),
    (
        "B4",
        BANK,
        "return order if len(order) == n else None",
        "return order",
        "tests/test_dag_workloads.py tests/test_dag_env.py",
    ),
    (
        "B5",
        BANK,
        "height[i, v] = 1 + height[i, kids].max() if kids.size else 0",
        "height[i, v] = height[i, kids].max() + (kids.size > 1) if kids.size else 0",
        "tests/test_dag_workloads.py tests/test_dag_env.py tests/test_idle_dag_agent.py",
    ),
    (
        "P1",
        PARAMS,
        "if layout.task_bits < 1 or widest_stage > layout.max_tasks:",
        "if layout.task_bits < 1 or widest_stage > layout.max_tasks + 1:",
        "tests/test_dag_env.py tests/test_env_contract.py",
    ),
    (
        "P2",
        PARAMS,
        "if s_bank > config.max_stages:",
        "if s_bank > config.max_stages + 1:",
        "tests/test_dag_env.py tests/test_env_contract.py tests/test_dag_workloads.py",
    ),
    (
        "P3",
        PARAMS,
        "if not 0 < max_time <= INF_MS:",
        "if not 0 <= max_time <= INF_MS:",
        "tests/test_dag_env.py tests/test_env_contract.py",
    ),
    (
        "P4",
        PARAMS,
        "if not reward_scale > 0:",
        "if not reward_scale >= 0:",
        "tests/test_dag_env.py tests/test_env_contract.py",
    ),
    (
        "C1",
        CONFIG,
        "if cfg.agent.levels is not None and cfg.agent.levels < depth:",
        "if cfg.agent.levels is not None and cfg.agent.levels < depth - 1:",
        T_SYSTEM,
    ),
    (
        "V1",
        "jaxsched/envs/dag/env.py",  # the pinning moved from the system's evaluator to the env (`episode`)
        "one = lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=True)  # noqa: E731\n        return params.replace(\n            bank=b.replace(",
        "one = lambda x: jax.lax.dynamic_index_in_dim(x, 0, keepdims=True)  # noqa: E731\n        return params.replace(\n            bank=b.replace(",
        T_SYSTEM,
    ),
    (
        "V2",
        EVALUATE,
        'Metric("avg_jct", "avg JCT (s)", ",.1f"),',
        'Metric("avg_jct", "avg JCT (s)", ",.1f", lower_is_better=False),',
        T_SYSTEM,
    ),
    ("V3", TABLE, "return np.sort(v[v >= 0] / 1000.0)", "return np.sort(v / 1000.0)", T_SYSTEM),
]

EQUIVALENT = {
    "G2": "an invalid job slot has no valid stage, so its summed embedding is already 0 before the mask",
    "R6": "a rollout's env is not reset after its end: the step returns 0 reward there, masked or not",
}

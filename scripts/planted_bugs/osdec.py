"""The OSDEC system's planted bugs (the deferrable-job env and its baselines), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

ENV = "jaxsched/envs/deferrable/env.py"
POLICIES = "jaxsched/policies/deferrable.py"
T_ENV = "tests/test_deferrable_env.py"
NN = "jaxsched/nn/osdec.py"
T_NN = "tests/test_osdec_agent.py::test_network_inputs_by_hand"

BUGS = [
    (
        "O1",
        ENV,
        "util = jnp.sum(jnp.where(take, state.p_cores * state.p_duration, 0))",
        "util = jnp.sum(jnp.where(take, state.p_cores, 0))",
        T_ENV,
    ),
    (
        "O2",
        ENV,
        "delay = jnp.sum(jnp.where(take, t - state.p_earliest, 0))",
        "delay = jnp.sum(jnp.where(take, t - state.p_submit, 0))",
        T_ENV,
    ),
    ("O3", ENV, "viol = jnp.maximum(load - cap, 0)", "viol = jnp.abs(load - cap)", T_ENV),
    (
        "O4",
        ENV,
        "- params.w_violation * viol.astype(jnp.float32)",
        "+ params.w_violation * viol.astype(jnp.float32)",
        T_ENV,
    ),
    ("O5", ENV, "((sj == scores) & (ij < state.p_id))", "((sj == scores) & (ij > state.p_id))", T_ENV),
    ("O6", ENV, "ahead = cand[j] & ((sj > scores)", "ahead = cand[j] & ((sj < scores)", T_ENV),
    (
        "O7",
        ENV,
        "return cand & (before + state.p_cores <= free)",
        "return cand & (before + state.p_cores < free)",
        T_ENV,
    ),
    ("O8", ENV, "cand = cand & (scores >= 0)", "cand = cand & (scores > 0)", T_ENV),
    (
        "O9",
        ENV,
        "r_end=put(state.r_end, state.t + state.p_duration)",
        "r_end=put(state.r_end, state.t + state.p_duration - 1)",
        T_ENV,
    ),
    ("O10", ENV, "ended = state.r_end <= t", "ended = state.r_end < t", T_ENV),
    (
        "O11",
        ENV,
        'expire = (p_id >= 0) & (fields["p_latest"] < t)',
        'expire = (p_id >= 0) & (fields["p_latest"] <= t)',
        T_ENV,
    ),
    ("O12", ENV, "backlog=state.backlog + want - m", "backlog=state.backlog + want", T_ENV),
    (
        "O13",
        ENV,
        "return (state.p_id >= 0) & (state.p_earliest <= state.t)",
        "return (state.p_id >= 0) & (state.p_earliest < state.t)",
        T_ENV,
    ),
    ("O14", ENV, "busy=state.busy + load + started_cores", "busy=state.busy + load", T_ENV),
    (
        "O15",
        ENV,
        "history = jnp.concatenate([state.history[1:], row[None]], axis=0)",
        "history = jnp.concatenate([row[None], state.history[:-1]], axis=0)",
        T_ENV,
    ),
    (
        "O16",
        ENV,
        "t = jnp.minimum(state.t, params.horizon - 1)",
        "t = jnp.minimum(state.t + 1, params.horizon - 1)",
        T_ENV,
    ),
    (
        "O17",
        ENV,
        "wide = np.flatnonzero(cores[e, : n_jobs[e]] > peak[e])",
        "wide = np.flatnonzero(cores[e, : n_jobs[e]] >= peak[e])",
        T_ENV,
    ),
    ("O18", ENV, "n = jnp.maximum(candidate.sum(), 1)", "n = jnp.maximum(candidate.shape[-1], 1)", T_ENV),
    (
        "O19",
        ENV,
        'np.searchsorted(s, np.arange(horizon + 1), side="right")',
        'np.searchsorted(s, np.arange(horizon + 1), side="left")',
        T_ENV,
    ),
    ("O20", ENV, "admit = free & (rank < m)", "admit = free & (rank <= m)", T_ENV),
    ("O21", ENV, "rel(self.p_latest))", "rel(self.p_earliest))", T_ENV),
    (
        "O22",
        ENV,
        "free_slots = jnp.nonzero(state.r_id < 0, size=r, fill_value=r)[0]",
        "free_slots = jnp.nonzero(state.r_id >= 0, size=r, fill_value=r)[0]",
        T_ENV,
    ),
    (
        "O23",
        POLICIES,
        "fits = obs.candidate[slot] & (obs.p_cores[slot] <= free)",
        "fits = obs.candidate[slot] & (obs.p_cores[slot] < free)",
        T_ENV,
    ),
    ("O24", POLICIES, '"sjf": lambda obs: obs.p_duration,', '"sjf": lambda obs: obs.p_cores,', T_ENV),
    ("O25", POLICIES, '"tetris": lambda obs: -obs.p_cores,', '"tetris": lambda obs: obs.p_cores,', T_ENV),
    (
        "O26",
        POLICIES,
        "order = jnp.lexsort((obs.p_id, jnp.where(obs.candidate, order_key, BIG)))",
        "order = jnp.lexsort((-obs.p_id, jnp.where(obs.candidate, order_key, BIG)))",
        T_ENV,
    ),
    # the network's inputs (nn/osdec.py) and the observation field only the network reads
    (
        "O27",
        NN,
        "obs.p_duration / DURATION_NORM, rel(obs.p_earliest), rel(obs.p_latest),",
        "obs.p_duration / DURATION_NORM, rel(obs.p_latest), rel(obs.p_earliest),",
        T_NN,
    ),
    (
        "O28",
        NN,
        "jnp.where(present, (obs.t - obs.p_submit) / TIME_NORM, 0.0))",
        "jnp.where(present, (obs.t - obs.p_earliest) / TIME_NORM, 0.0))",
        T_NN,
    ),
    (
        "O29",
        NN,
        "obs.r_end[None, :] > obs.t + ahead[:, None]",
        "obs.r_end[None, :] >= obs.t + ahead[:, None]",
        T_NN,
    ),
    ("O30", NN, "angle = 2 * jnp.pi * obs.day_phase", "angle = jnp.pi * obs.day_phase", T_NN),
    (
        "O31",
        NN,
        "jnp.sin(angle), jnp.cos(angle), obs.t / obs.horizon,",
        "jnp.sin(angle), jnp.cos(angle), obs.t / obs.capacity,",
        T_NN,
    ),
    (
        "O32",
        ENV,
        "day_phase=(state.t % params.day).astype(jnp.float32) / params.day.astype(jnp.float32),",
        "day_phase=(state.t % params.day).astype(jnp.float32) / params.horizon.astype(jnp.float32),",
        T_ENV,
    ),
]

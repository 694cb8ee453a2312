"""Planted bugs in the gymnax and Gymnasium adapters (`jaxsched/adapters/`), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

GYMNAX = "jaxsched/adapters/gymnax.py"
T_GYMNAX = "tests/test_gymnax_adapter.py"
GYM = "jaxsched/adapters/gymnasium.py"
T_GYM = "tests/test_gymnasium_adapter.py"

BUGS = [
    # a truncated episode not reported as done
    ("G1", GYMNAX, "done = jnp.logical_or(terminated, truncated)", "done = terminated", T_GYMNAX),
    # the flat observation's fields in another order than the pytree's
    ("G2", GYMNAX, "for x in jax.tree.leaves(obs)])", "for x in jax.tree.leaves(obs)[::-1]])", T_GYMNAX),
    # gymnax's discount 1 at a terminal step
    ("G3", GYMNAX, 'info["discount"] = 1.0 - terminated.astype(jnp.float32)', 'info["discount"] = jnp.ones((), jnp.float32)', T_GYMNAX),
    # the flat observation space one field short
    ("G4", GYMNAX, "size = sum(int(np.prod(s.shape)) for s in leaves)", "size = sum(int(np.prod(s.shape)) for s in leaves[1:])", T_GYMNAX),
    # the vector env: a pending copy keeps its finished state instead of the fresh one
    ("G5", GYM, "state = _select(pending, state_re, stepped)", "state = stepped", T_GYM),
    # the vector env: a reset call's reward not zeroed
    ("G6", GYM, "reward = jnp.where(pending, 0.0, reward)", "reward = reward", T_GYM),
    # the vector env: every copy reset with the same key (its new episode the same). Sharing the *step* keys
    # instead is an equivalent mutant: no env's `step_env` reads its key (every step is deterministic)
    ("G7", GYM, "obs_re, state_re = vreset(jax.random.split(k_reset, batch), params)", "obs_re, state_re = vreset(jnp.stack([k_reset] * batch), params)", T_GYM),
    # the single env: a truncated episode's metrics not reported
    ("G8", GYM, "terminated | truncated, env.metrics,", "terminated, env.metrics,", T_GYM),
    # a bool field's space as an integer Box
    ("G9", GYM, "return gspaces.Box(0, 1, space.shape, np.bool_)", "return gspaces.Box(0, 1, space.shape, np.int8)", T_GYM),
    # the single env: keys not drawn from the seeded np_random
    ("G10", GYM, "return jax.random.key(int(self.np_random.integers(2**31 - 1)))", "return jax.random.key(0)", T_GYM),
]

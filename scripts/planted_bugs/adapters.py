"""Planted bugs in the gymnax adapter (`jaxsched/adapters/gymnax.py`), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

GYMNAX = "jaxsched/adapters/gymnax.py"
T_GYMNAX = "tests/test_gymnax_adapter.py"

BUGS = [
    # a truncated episode not reported as done
    ("G1", GYMNAX, "done = jnp.logical_or(terminated, truncated)", "done = terminated", T_GYMNAX),
    # the flat observation's fields in another order than the pytree's
    ("G2", GYMNAX, "for x in jax.tree.leaves(obs)])", "for x in jax.tree.leaves(obs)[::-1]])", T_GYMNAX),
    # gymnax's discount 1 at a terminal step
    ("G3", GYMNAX, 'info["discount"] = 1.0 - terminated.astype(jnp.float32)', 'info["discount"] = jnp.ones((), jnp.float32)', T_GYMNAX),
    # the flat observation space one field short
    ("G4", GYMNAX, "size = sum(int(np.prod(s.shape)) for s in leaves)", "size = sum(int(np.prod(s.shape)) for s in leaves[1:])", T_GYMNAX),
]

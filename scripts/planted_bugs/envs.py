"""Planted bugs in what every env shares (the embedded default params, the DAG env's observation space,
the heuristics table) and in the layer rule that keeps a system off the registry, for
`scripts/planted_bugs.py` (docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

T_CONTRACT = "tests/test_env_contract.py"
T_POLICIES = "tests/test_policies_table.py"
T_LAYERS = "tests/test_layers.py"

BUGS = [
    ("U1", "jaxsched/policies/__init__.py", "for cls in type(env).__mro__:", "for cls in (type(env),):", T_POLICIES),
    ("U2", "jaxsched/core/env.py", 'if self.__dict__.get("_default_params") is None:', "if True:", T_CONTRACT),
    ("U3", "jaxsched/envs/dag/env.py", "n_idle=box(0, (), high=k),", "n_idle=box(0, (), high=k - 1),", T_CONTRACT),
    ("U4", "jaxsched/envs/dag/env.py", "job_order=box(-1, (j,)),", "job_order=box(0, (j,)),", T_CONTRACT),
    ("U6", "jaxsched/envs/deferrable/env.py", "one = lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=True)  # noqa: E731\n        return params.replace(bank=jax.tree.map(one", "one = lambda x: jax.lax.dynamic_index_in_dim(x, 0, keepdims=True)  # noqa: E731\n        return params.replace(bank=jax.tree.map(one", T_CONTRACT),
    ("U5", "jaxsched/systems/sced2/table.py", "from jaxsched.systems.sced2 import SYSTEM", 'from jaxsched.systems import systems; SYSTEM = systems()["sced2"]', T_LAYERS),
]

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
    # every field's space: a bound too tight for real rollouts, a shape off by a field, a wrong dtype
    ("U7", "jaxsched/envs/gpu_cloud/env.py", "arrival_rank=count(n, low=-1),", "arrival_rank=count(n),", T_CONTRACT),
    ("U8", "jaxsched/envs/deferrable/env.py", "history=Box(0.0, np.inf, (k, len(HISTORY_FIELDS))),", "history=Box(0.0, np.inf, (k, N_PENDING_FEATURES)),", T_CONTRACT),
    ("U9", "jaxsched/envs/hpc/env.py", "sigma=count((n,)), t=count(()),", "sigma=Box(0.0, jnp.inf, (n,)), t=count(()),", T_CONTRACT),
    # the env page's table drifts from the space: the locality env's `free` bounded by the whole cluster
    ("U10", "jaxsched/envs/gpu_locality/env.py", "profile=count(j, k), free=count(n, high=m),", "profile=count(j, k), free=count(n, high=n * m),", "tests/test_env_pages.py"),
    # printing the registry hides a name's overrides again
    ("U11", "jaxsched/envs/registry.py", '        return "\\n".join(repr(spec) for spec in self.values())', '        return repr(list(self))', "tests/test_front_door.py"),
    ("U5", "jaxsched/systems/sced2/table.py", "from jaxsched.systems.sced2 import SYSTEM", 'from jaxsched.systems import systems; SYSTEM = systems()["sced2"]', T_LAYERS),
]

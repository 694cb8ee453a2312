"""jaxsched: JAX-native cluster-scheduling simulators and reinforcement-learning schedulers.

The front door: `env, params = jaxsched.make("das-small")` (or "dbf", ...; `jaxsched.registered()` lists
every environment with its paper and defaults).
"""

__version__ = "0.1.0"


def make(name: str, **overrides):
    """`(env, params)` of a registered environment (`jaxsched.envs.registry.make`)."""
    from jaxsched.envs.registry import make as _make

    return _make(name, **overrides)


def registered():
    """`{name: EnvSpec}` of every registered environment, with its paper and defaults."""
    from jaxsched.envs.registry import registered as _registered

    return _registered()

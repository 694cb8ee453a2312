"""`policies.make_heuristic` finds an env's heuristics through one table keyed by env class: a new env
registers its row, and the built-in rows stay (whichever comes first)."""

import pytest

import jaxsched
from jaxsched import policies


class ToyEnv:
    """Stands for a sixth system's env: no base class needed to hold heuristics."""


class ToySubEnv(ToyEnv):
    pass


def test_a_registered_env_gets_its_heuristics_and_subclasses_inherit_them():
    def make(env, name, **opts):
        return (name, opts)

    policies.register_heuristics(ToyEnv, lambda env: ("first", "random"), make)
    assert policies.heuristic_names(ToySubEnv()) == ("first", "random")
    assert policies.make_heuristic(ToyEnv(), "first", width=2) == ("first", {"width": 2})
    with pytest.raises(ValueError, match="unknown heuristic 'sjf' for ToyEnv; choose from first, random"):
        policies.make_heuristic(ToyEnv(), "sjf")
    # the built-in rows are still there after a user's row came first
    env, _ = jaxsched.make("osdec-quick", horizon=12, episodes=1)
    assert policies.heuristic_names(env) == ("fifo", "sjf", "tetris", "random")
    with pytest.raises(ValueError, match="takes no option"):
        policies.make_heuristic(env, "fifo", backfill=True)


def test_an_env_without_a_row_is_a_clear_error():
    with pytest.raises(ValueError, match="no heuristics for object"):
        policies.heuristic_names(object())

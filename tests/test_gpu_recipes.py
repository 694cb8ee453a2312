"""The accelerator recipes (`configs/<kind>/*_gpu.yaml`): each is its CPU twin (the same name without
`_gpu`) but for the number of seeds and the budget, steps at least 1,024 envs at once (envs × seeds, the
seeds vmapped in one program), and trains at least the budget its paper states. Loading only: no program
is built."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from jaxsched.systems import load_run_config

ROOT = Path(__file__).resolve().parents[1]
GPU_RECIPES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").glob("*/*_gpu.yaml"))
# What a twin may change: its name, the seeds, and how many updates it trains in how many chunks.
MAY_DIFFER = {"name", "num_seeds", "total_updates", "updates_per_chunk"}
# Decisions a seed that the paper trains for, where it states them (a kind missing here states none: the
# twin then trains the CPU recipe's budget). DBF: 100,000 episodes of 1,000 placed jobs (§IV).
PAPER_DECISIONS = {"dbf": 100_000 * 1_000}


def _twin(path: str) -> str:
    return path.replace("_gpu.yaml", ".yaml")


def _differences(a, b, prefix: str = "") -> set[str]:
    """Dotted names of the fields where the configs (dataclasses, nested) `a` and `b` differ."""
    out = set()
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x) and dataclasses.is_dataclass(y):
            out |= _differences(x, y, f"{prefix}{f.name}.")
        elif x != y:
            out.add(prefix + f.name)
    return out


def _envs_per_seed(budget) -> int:
    """Parallel envs of one seed under a learner's algorithm config (`Learner.budget`)."""
    return budget.num_sequences * budget.rollouts if hasattr(budget, "rollouts") else budget.num_envs


def test_every_system_has_an_accelerator_recipe():
    assert {p.split("/")[1] for p in GPU_RECIPES} == {"dbf", "osdec", "dag", "das", "sced2"}, GPU_RECIPES


@pytest.mark.parametrize("path", GPU_RECIPES)
def test_a_gpu_recipe_is_its_twin_sized_for_an_accelerator(path):
    system, gpu = load_run_config(ROOT / path)
    _, cpu = load_run_config(ROOT / _twin(path))
    changed = _differences(gpu, cpu)
    assert {name.rsplit(".", 1)[-1] for name in changed} <= MAY_DIFFER, changed
    assert gpu.name == cpu.name + "_gpu"
    for name in system.learner.names(gpu):  # each learner's own algorithm config, as `train` runs it
        alg, twin = system.learner.budget(gpu, name), system.learner.budget(cpu, name)
        assert gpu.num_seeds * _envs_per_seed(alg) >= 1_024, (name, gpu.num_seeds, _envs_per_seed(alg))
        assert alg.total_updates % alg.updates_per_chunk == 0  # whole chunks: a checkpoint ends each
        assert alg.total_updates // alg.updates_per_chunk >= 10  # chunked: it can stop anywhere
        decisions = alg.steps_per_update * alg.total_updates  # a seed's
        want = PAPER_DECISIONS.get(gpu.kind, twin.steps_per_update * twin.total_updates)
        assert decisions >= want, (name, decisions, want)

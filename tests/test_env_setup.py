"""The env setup modules' banks (`envs/<env>/setup.py`, the one builder of `jaxsched.make` and the system
configs): the held-out test bank is drawn from `workload.test_seed` alone and the training bank from
`workload.bank_seed` alone, so no setting can make a test episode a training one; DAS's, cut from one
trace in time, holds every test job after every training job."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxsched.systems import get_system, load_run_config

SEEDED = {  # kind -> (config, overrides)
    "dbf": ("configs/dbf/quick.yaml", []),
    "sced2": ("configs/sced2/quick.yaml", []),
    "dag": ("configs/dag/quick.yaml", []),
    "osdec": ("configs/osdec/quick.yaml", []),
}


def _banks(kind: str, *overrides: str):
    path, base = SEEDED[kind]
    _, cfg = load_run_config(path, [*base, *overrides])
    _, train, test = get_system(kind).learner.build(cfg)[:3]
    return _jobs(train), _jobs(test)


def _jobs(params) -> list:
    """The bank's job arrays (not what the params derive from the training bank, e.g. DBF's runtime norm)."""
    if not hasattr(params, "bank"):  # the GPU-locality params hold the jobs' fields themselves
        return [np.asarray(x) for x in (params.submit, params.gpus, params.ideal, params.model)]
    jobs = params.bank
    return [np.asarray(x) for x in jax.tree.leaves(jobs)]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("kind", sorted(SEEDED))
def test_each_bank_follows_its_own_seed_alone(kind):
    train, test = _banks(kind)
    other_train, same_test = _banks(kind, "workload.bank_seed=11")
    same_train, other_test = _banks(kind, "workload.test_seed=12")
    assert _same(test, same_test) and not _same(train, other_train)
    assert _same(train, same_train) and not _same(test, other_test)


def test_the_gpu_clouds_test_jobs_all_come_after_its_training_jobs():
    _, cfg = load_run_config("configs/das/quick.yaml", ["workload.n_jobs=2000", "env.episode_jobs=100"])
    _, train, test, starts = get_system("das").learner.build(cfg)
    assert np.max(np.asarray(train.bank.submit)) <= np.min(np.asarray(test.bank.submit))
    assert train.bank.num_jobs + test.bank.num_jobs == 2000 and len(starts) >= 2

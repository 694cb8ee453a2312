"""Shared test fixtures: where the repository and the shared data are.

`shared_data(relative)` gives a path under `../shared/data/` (the real traces: SWF logs, Alibaba GPU
samples, TPC-H DAGs; never shipped), through `require_trace`: without it the test is skipped, except under
CI (`CI` set), where the folder is part of the setup and its absence is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

# One BLAS thread (jaxsched/core/threads.py): jax's CPU LAPACK kernels run on scipy's OpenBLAS, whose
# busy-waiting threads slow them ~10x beside XLA's pool — worse with two xdist workers on two cores. Set
# before numpy or scipy load their library here, and inherited by the notebooks' kernels.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# One persistent XLA compilation cache for the session, its xdist workers and every process they start
# (the CLI, the notebooks' kernels, the 8-device sharding run): the same programs, compiled in several
# test files and processes, are otherwise compiled once per process. Set before any test imports jax;
# an environment that sets its own directory keeps it. (Loading an entry logs a harmless E-level
# "+prefer-no-gather" line: docs/testing.md, "CI time".)
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / ".pytest_cache" / "jax-compilation"))
# Every program, not only those that took >= 1 s to compile (JAX's default): the small env and policy
# programs that many test files and the notebooks' kernels compile again are then loaded too.
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# The suite is compile-bound (a cold run spends most of its time in XLA). LLVM's optimisation level 1
# instead of the default 2 compiles faster and runs the tests' small programs about as fast: back to back on
# this 2-core CPU, the DAS training-run fixture took 51 s instead of 57 s, the PPO and DA learning tests
# 38 / 42 s instead of 40 / 45 s (level 0 compiles faster still but runs the learning tests 75 % slower).
# The semantics are XLA's at any level; the golden numbers hold at their tolerances. An environment
# that sets XLA_FLAGS itself keeps them. LLVM's expensive passes off and the legacy CPU fusion
# emitters cut the two system tests from 179 s to 109 s cold; the full cold suite ran 22:49 against 24:09
# (AMD EPYC, one run each; the OSDEC learning test, alone, runs as fast with either emitter: docs/testing.md,
# "CI time"). They are `jaxsched --fast-compile`'s (jaxsched/core/compile.py; a test holds the two equal).
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_backend_optimization_level=1 --xla_llvm_disable_expensive_passes=true"
    " --xla_cpu_use_fusion_emitters=false",
)


def require_trace(path: Path) -> None:
    """Skip when a shared file is absent, except in CI (`CI` set), which has ../shared/data: there a
    missing file must fail, or the published-table checks would pass by never running."""
    if Path(path).exists():
        return
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false"):
        pytest.fail(f"{path} not available, and CI is set: CI must run this against ../shared/data")
    pytest.skip(f"{path} not available")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_data():
    """`path(relative) -> Path` under ../shared/data (skip, or fail under CI, when absent)."""

    def path(relative: str) -> Path:
        p = DATA / relative
        require_trace(p)
        return p

    return path


# The heaviest files first, by their total time: pyproject's `--dist loadfile` gives each of the two workers
# a whole file at a time, in collection order (with `--no-loadscope-reorder`; xdist's default reorders by
# test count, which put the one-test notebooks last), so a heavy file collected last (the notebooks are,
# after tests/) would run alone at the end while the other worker idles. Seconds per file, cold, AMD EPYC,
# under -n 2 (a profile of 2026-11-27): MAPPO 185, OSDEC agent 185, idle-slot agent 176, PPO 136, DAS
# train 123, DAS RWGP learning 105, DAG system 98, DAG env 88, SCED² 88, DQN 86, notebook 02 77, OSDEC
# system 74, env contract 68, imitation 63, notebooks 03/04 57, metaheuristics 55, RWGP 49, train CLI 47,
# inspector 47, notebooks 01/05 47/46; every other file is under 40 s. Calibration (2026-12-02) ≈ 70.
HEAVIEST_FIRST = (
    "tests/test_mappo.py",
    "tests/test_osdec_agent.py",
    "tests/test_idle_dag_agent.py",
    "tests/test_ppo.py",
    "tests/test_das_train.py",
    "tests/test_das_rwgp_learning.py",
    "tests/test_dag_system.py",
    "tests/test_dag_env.py",
    "tests/test_sced2.py",
    "tests/test_dqn.py",
    "notebooks/02_das_gpu_cloud.ipynb",
    "tests/test_osdec_system.py",
    "tests/test_calibration.py",
    "tests/test_env_contract.py",
    "tests/test_gymnasium_adapter.py",  # ≈ 85 s: check_env compiles every registered env (2026-12-03)
    "tests/test_imitation.py",
    "notebooks/03_sced2_gpu_locality.ipynb",
    "notebooks/04_dag_idle_slots.ipynb",
    "tests/test_metaheuristics.py",
    "tests/test_rwgp.py",
    "tests/test_train_cli.py",
    "tests/test_inspector.py",
    "notebooks/01_quickstart_hpc.ipynb",
    "notebooks/05_osdec.ipynb",
)


def pytest_collection_modifyitems(config, items):
    """Run the files of `HEAVIEST_FIRST` first, in its order; every other file after them, as collected.
    `JAXSCHED_TEST_ORDER=given` keeps the command line's order (the planted-bug sweeps name the quick,
    pointed tests first and stop at the first failure)."""
    if os.environ.get("JAXSCHED_TEST_ORDER") == "given":
        return
    rank = {path: i for i, path in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: files stay whole

"""`experiments.footprint`: a compiled program's stage times and bytes, and the memory line's arithmetic."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsched
from jaxsched.experiments.footprint import compile_cost, largest_batch, memory_line, tree_bytes

ROOT = Path(__file__).resolve().parents[1]


def test_compile_cost_reads_the_programs_own_bytes_and_the_compiled_program_runs():
    x = jnp.ones((64, 32), jnp.float32)
    compiled, rec = compile_cost(jax.jit(lambda a: a.sum(0)), x)
    assert rec["argument_bytes"] == 64 * 32 * 4 and rec["output_bytes"] == 32 * 4
    assert (
        rec["working_bytes"]
        == rec["argument_bytes"] + rec["output_bytes"] - rec["alias_bytes"] + rec["temp_bytes"]
    )
    assert all(rec[k] >= 0.0 for k in ("trace_s", "lower_s", "compile_s"))
    np.testing.assert_array_equal(compiled(x), np.full(32, 64.0, np.float32))


def test_a_donated_argument_is_counted_once():
    x = jnp.ones((256,), jnp.float32)
    _, plain = compile_cost(jax.jit(lambda a: a + 1.0), x)
    _, donated = compile_cost(jax.jit(lambda a: a + 1.0, donate_argnums=0), x)
    assert plain["alias_bytes"] == 0 and donated["alias_bytes"] == 256 * 4
    assert donated["working_bytes"] == plain["working_bytes"] - 256 * 4


def test_memory_line_and_largest_batch_by_hand():
    fixed, per_env = memory_line((1024, 10 * 2**20 + 1024 * 3000), (4096, 10 * 2**20 + 4096 * 3000))
    assert (fixed, per_env) == (10 * 2**20, 3000.0)
    assert largest_batch(fixed, per_env, 2**30) == (2**30 - 10 * 2**20) // 3000
    assert largest_batch(fixed, per_env, 2**20) == 0  # not even the fixed part fits
    with pytest.raises(ValueError, match="large batch"):
        memory_line((1024, 1), (1024, 2))
    with pytest.raises(ValueError, match="per_env must be > 0"):
        largest_batch(0.0, 0.0, 2**30)


def test_tree_bytes_sums_array_leaves():
    assert tree_bytes({"a": jnp.zeros((3, 4), jnp.float32), "b": (jnp.zeros(5, jnp.int8), 7)}) == 53


def _benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_page_shows_the_records_tables():
    """docs/results/footprint.md's two tables are what the benchmarks render from the stored records:
    every env registered, the five quick configs, and no hand-edited number."""
    page = (ROOT / "docs/results/footprint.md").read_text()
    envs = json.loads((ROOT / "docs/results/envs/footprint_cpu.json").read_text())
    train = json.loads((ROOT / "docs/results/train_sweep/footprint_cpu.json").read_text())
    assert _benchmark("env_footprint").table(envs) in page
    assert _benchmark("train_sweep").footprint_table(train) in page
    assert {r["env"] for r in envs if "fit" in r} == set(jaxsched.registered())
    assert {Path(r["config"]).parent.name for r in train} == {"dbf", "sced2", "osdec", "dag", "das"}


def test_the_bench_memory_line_says_so_when_the_program_does_not_grow():
    from jaxsched.experiments.throughput import memory_summary

    rec = dict(env="hpc", state_bytes_per_env=2048.0, platform="cpu")
    at = lambda batch, nbytes: rec | {"batch": batch, "rollout_working_bytes": nbytes}  # noqa: E731
    assert "does not grow from batch 1 to 2" in memory_summary([at(1, 4096), at(2, 4096)])
    grows = [at(2, 2**20), at(4, 2**21)]
    line = memory_summary(grows)
    assert "512.0 KiB/env + 0.0 MiB" in line and f"{24 * 2**30 // 2**19:,} in 24 GiB" in line

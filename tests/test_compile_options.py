"""`core.compile`: the fast-compile XLA flags and the persistent compilation cache, and the CLI options
that turn them on."""

from __future__ import annotations

import jax
import pytest

from jaxsched.cli import _needs_systems, build_parser
from jaxsched.core.compile import FAST_COMPILE_XLA_FLAGS, compile_cache, fast_compile


def test_fast_compile_adds_its_flags_and_keeps_the_users(monkeypatch):
    users = ["--xla_backend_optimization_level=3", "--xla_force_host_platform_device_count=2"]
    monkeypatch.setenv("XLA_FLAGS", " ".join(users))
    flags = fast_compile().split()
    assert flags[:2] == users
    assert flags[2:] == list(FAST_COMPILE_XLA_FLAGS[1:])  # the user's level stays; the other two added
    assert fast_compile().split() == flags  # idempotent
    monkeypatch.delenv("XLA_FLAGS")
    assert fast_compile().split() == list(FAST_COMPILE_XLA_FLAGS)


def test_the_suite_compiles_with_the_same_flags():
    """tests/conftest.py sets them for the test processes (unless the environment has its own)."""
    from conftest import __file__ as conftest_file

    text = open(conftest_file).read().replace('"\n    "', "")
    assert " ".join(FAST_COMPILE_XLA_FLAGS) in text


def test_compile_cache_points_jax_at_the_directory(tmp_path):
    before = (jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs)
    try:
        where = compile_cache(tmp_path / "xla" / "cache", min_compile_seconds=2.5)
        assert where.is_dir() and jax.config.jax_compilation_cache_dir == str(where)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 2.5
        (tmp_path / "file").write_text("")
        with pytest.raises(ValueError, match="is not a directory"):
            compile_cache(tmp_path / "file")
        with pytest.raises(ValueError, match="min_compile_seconds must be >= 0"):
            compile_cache(tmp_path, min_compile_seconds=-1)
    finally:
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])


def test_cli_options_come_before_the_command_and_their_value_is_not_one(monkeypatch):
    monkeypatch.delenv("JAXSCHED_COMPILE_CACHE", raising=False)
    monkeypatch.delenv("JAXSCHED_FAST_COMPILE", raising=False)
    assert not _needs_systems(["--compile-cache", "table", "train", "configs/dag/quick.yaml"])
    assert _needs_systems(["--compile-cache", "train", "table", "dag"])
    args = build_parser(systems=False).parse_args(["--fast-compile", "--compile-cache", "d", "demo"])
    assert args.fast_compile and args.compile_cache == "d" and args.command == "demo"
    monkeypatch.setenv("JAXSCHED_FAST_COMPILE", "1")
    monkeypatch.setenv("JAXSCHED_COMPILE_CACHE", "/tmp/x")
    args = build_parser(systems=False).parse_args(["demo"])
    assert args.fast_compile and args.compile_cache == "/tmp/x"

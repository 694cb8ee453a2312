"""Two ways to spend less time compiling: faster XLA compiles, and programs kept between processes.

`fast_compile()` adds XLA flags that compile the CPU backend's programs faster: LLVM's optimisation level 1
instead of 2, its expensive passes off, and XLA's older CPU fusion emitters. Measured on the 2-core AMD
EPYC (2026-12-08, `docs/results/footprint.md`), the quick configs' training chunks compile 35–40 % faster;
DAG's and DAS's chunks then run as fast, OSDEC's Transformer chunk about 12 % slower. So it is a choice, not
the default: on for a notebook, a quick config or CI (the test suite compiles with the same flags,
`tests/conftest.py`), off for a long run. The flags are read when XLA's backend starts: call it before the
first jax computation of the process (`jaxsched --fast-compile ...` does).

`compile_cache(path)` turns on JAX's persistent compilation cache in `path`: a program compiled once (a
training chunk, an evaluation) is loaded by the next process that builds the same program — a resumed run,
`eval` after `train`, a notebook restarted — instead of compiled again. A changed shape or config compiles
anew. XLA:CPU logs an E-level "+prefer-no-gather is not supported" line for each entry it loads on some
CPUs (jax-ml/jax#38445: two tuning flags counted as features); the CLI keeps XLA's log below fatal.
"""

from __future__ import annotations

import os
from pathlib import Path

FAST_COMPILE_XLA_FLAGS = (
    "--xla_backend_optimization_level=1",
    "--xla_llvm_disable_expensive_passes=true",
    "--xla_cpu_use_fusion_emitters=false",
)


def fast_compile() -> str:
    """Add `FAST_COMPILE_XLA_FLAGS` to `XLA_FLAGS` (flags a user already set keep their value); returns
    the new `XLA_FLAGS`. Effective only before XLA's backend starts in this process."""
    have = os.environ.get("XLA_FLAGS", "").split()
    names = {flag.split("=", 1)[0] for flag in have}
    added = [flag for flag in FAST_COMPILE_XLA_FLAGS if flag.split("=", 1)[0] not in names]
    os.environ["XLA_FLAGS"] = " ".join(have + added)
    return os.environ["XLA_FLAGS"]


def compile_cache(path: str | os.PathLike, min_compile_seconds: float = 1.0) -> Path:
    """Keep compiled programs in `path` (created if missing) for later processes: every program whose
    compile took at least `min_compile_seconds` (JAX's default, 1 s: the small ones cost more to load
    than to compile). Returns the directory."""
    import jax

    if min_compile_seconds < 0:
        raise ValueError(f"compile_cache: min_compile_seconds must be >= 0, got {min_compile_seconds}")
    directory = Path(path).expanduser()
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"compile_cache: {directory} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    return directory

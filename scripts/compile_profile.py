"""Where a test run's time goes: tracing, lowering and XLA compilation per test file, from JAX's own timers.

A pytest plugin and its report. The plugin listens to `jax.monitoring`'s duration events (jaxpr tracing,
MLIR lowering, backend compilation, persistent-cache loads) and adds them up per test file, beside each
file's wall time; every xdist worker writes its own JSON. The notebooks run in their own kernels and are
not in it (their wall time is, in `--durations`).

    PYTHONPATH=scripts JAXSCHED_COMPILE_PROFILE=/tmp/prof pytest -n 2 -p compile_profile tests/test_mappo.py
    python scripts/compile_profile.py /tmp/prof        # the table, heaviest file first

docs/testing.md, "CI time", has what it found."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

EVENTS = {  # jax.monitoring's event name (its last part) -> the report's column
    "jaxpr_trace_duration": "trace",
    "jaxpr_to_mlir_module_duration": "lower",
    "backend_compile_duration": "compile",
    "cache_retrieval_time_sec": "cache_load",
}
_current = ["<collection>"]
_seconds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def _listener(event: str, duration: float, **_) -> None:
    column = EVENTS.get(event.rsplit("/", 1)[-1])
    if column is not None:
        _seconds[_current[0]][column] += duration
        if column == "compile":
            _seconds[_current[0]]["programs"] += 1


def pytest_configure(config) -> None:
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_listener)


def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 (pytest's hook signature)
    _current[0] = item.nodeid.split("::")[0]
    _seconds[_current[0]]["wall"] += 0.0  # the file appears even when it compiles nothing


def pytest_runtest_logreport(report) -> None:
    _seconds[report.nodeid.split("::")[0]]["wall"] += report.duration


def pytest_sessionfinish(session) -> None:  # noqa: ARG001
    out = Path(os.environ.get("JAXSCHED_COMPILE_PROFILE", "compile_profile"))
    out.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (out / f"{worker}.json").write_text(json.dumps({f: dict(c) for f, c in _seconds.items()}, indent=1))


def report(folder: Path) -> str:
    """The per-file table of every worker's JSON in `folder`, heaviest wall time first, with a total."""
    files: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted(folder.glob("*.json")):
        for name, seconds in json.loads(path.read_text()).items():
            files[name].update(seconds)
    columns = ("wall", "trace", "lower", "compile", "cache_load", "programs")
    total = collections.Counter()
    lines = [f"{'file':44s}" + "".join(f"{c:>11s}" for c in columns)]
    for name, s in sorted(files.items(), key=lambda kv: -kv[1]["wall"]):
        total.update(s)
        lines.append(f"{name:44s}" + "".join(f"{s[c]:11.1f}" for c in columns))
    lines.append(f"{'total':44s}" + "".join(f"{total[c]:11.1f}" for c in columns))
    work = total["trace"] + total["lower"] + total["compile"]
    lines.append(f"tracing, lowering and compiling: {work:.0f} of {total['wall']:.0f} worker-seconds")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/compile_profile.py FOLDER  (the plugin's JAXSCHED_COMPILE_PROFILE)")
    print(report(Path(sys.argv[1])))

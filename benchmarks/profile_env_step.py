"""Where a batched env step spends its time, by source function and line: a `jax.profiler` trace of
`--calls` jitted `lax.scan`s of `--steps` steps each (random valid actions, auto-reset on: the loop
`env_throughput.py` times), each XLA thunk's time attributed through the compiled module's stack frames
to the innermost frame inside the `jaxsched` package.

    python benchmarks/profile_env_step.py --env dag --batch 1024 --json F
    python benchmarks/profile_env_step.py --env hpc --batch 4096 --top 30

Times are under the profiler, which inflates small thunks: read the shares, not the milliseconds, and
time a change with `env_throughput.py` (interleaved before/after runs). Thunks without a stack frame
(copies, broadcasts and reduce windows XLA inserts) are listed by their kind; `while` thunks are mostly
the threefry hashes of key splits and draws (rolled loops on a CPU). Profile the scan, not one jitted
step: a step jitted alone copies and broadcasts its whole state in and out at every call (on the AMD
EPYC, materialised broadcasts were 15 % of a DAG step alone and 2.5 % of the same step in the scan).
Records: {"by_function", "by_line", "by_thunk": [[name, ms per step, share]], "ms_per_step", "env",
"batch", ...platform}.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile

import jax

import jaxsched
from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import (
    default_hpc_setup,
    platform_info,
    random_action,
    random_rollout,
    random_valid_action,
)

# Trace events that are runtime bookkeeping, not one compiled thunk of the step.
_RUNTIME = re.compile(r"^\$|Thunk|Pjit|PjRt|^Common|^ParseArguments|^Handle inputs|^DevicePut")


def setup(name: str, dag_max_events: int | None):
    """`(env, params, action_fn(key, obs))` of env `name`, as env_throughput.py sets it up."""
    if name == "hpc":
        env, params = default_hpc_setup()
        return env, params, random_valid_action
    if name == "dag":
        env, params = jaxsched.make("dag", max_events=dag_max_events)
        return env, params, random_action(env)
    raise ValueError(f"--env: unknown {name!r}; choose hpc or dag")


def stack_frames(hlo_text: str) -> tuple[dict[str, int], dict[int, list[tuple[str, str, int]]]]:
    """`({instruction: stack frame id}, {frame id: [(file, function, line)] innermost first})` from a
    compiled module's text (its FileNames / FunctionNames / FileLocations / StackFrames tables)."""
    tables: dict[str, list[str]] = collections.defaultdict(list)
    section = None
    for line in hlo_text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
        elif section and line.strip():
            tables[section].append(line)
        else:
            section = None
    files = {int(i): s.strip('"') for i, s in (x.split(" ", 1) for x in tables["FileNames"])}
    funcs = {int(i): s.strip('"') for i, s in (x.split(" ", 1) for x in tables["FunctionNames"])}
    locs, parents = {}, {}
    for x in tables["FileLocations"]:
        kv = dict(re.findall(r"(\w+)=(\d+)", x))
        locs[int(x.split(" ", 1)[0])] = (files[int(kv["file_name_id"])], funcs[int(kv["function_name_id"])],
                                         int(kv["line"]))  # fmt: skip
    for x in tables["StackFrames"]:
        kv = dict(re.findall(r"(\w+)=(\d+)", x))
        parents[int(x.split(" ", 1)[0])] = (int(kv["file_location_id"]), int(kv["parent_frame_id"]))

    def chain(fid: int) -> list[tuple[str, str, int]]:
        out = []
        while fid and fid in parents:
            loc, parent = parents[fid]
            out.append(locs[loc])
            fid = 0 if parent == fid else parent
        return out

    instruction = re.compile(r"%?([\w.\-]+) = .*?stack_frame_id=(\d+)")
    frame_of = {m.group(1): int(m.group(2)) for m in instruction.finditer(hlo_text)}
    return frame_of, {f: chain(f) for f in set(frame_of.values())}


def thunk_times(trace_dir: str) -> collections.Counter:
    """`{(thunk name, enclosing thunk name or None): µs}` of self time summed over a perfetto trace written
    by `jax.profiler`: a thunk that runs others (a `while`'s body, a `call`) counts only the time they do
    not cover, so each µs of the trace is counted once, and a body's thunks keep their loop's name."""
    path = sorted(glob.glob(f"{trace_dir}/plugins/profile/*/perfetto_trace.json.gz"))[-1]
    with gzip.open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    threads = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            threads[e.get("pid"), e.get("tid")].append(e)
    times: collections.Counter = collections.Counter()
    for spans in threads.values():
        spans.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))  # a parent before the children it encloses
        open_spans: list = []  # (end, (name, its parent's name) if counted else None) of enclosing spans
        for e in spans:
            start, dur = e["ts"], e.get("dur", 0)
            while open_spans and open_spans[-1][0] <= start:
                open_spans.pop()
            counted = not _RUNTIME.search(e["name"])
            if counted:
                parent = next((span for _, span in reversed(open_spans) if span), None)
                times[e["name"], parent[0] if parent else None] += dur
                if parent:  # its time is the parent's no longer
                    times[parent] -= dur
            open_spans.append((start + dur, (e["name"], parent[0] if parent else None) if counted else None))
    return times


def result_shapes(hlo_text: str) -> dict[str, str]:
    """`{instruction: result shape}` of a compiled module's text, so a thunk without a stack frame can
    still be told apart (`u32[1024,16,18,4]` is a per-stage array, `(s32[], ...` a loop's tuple)."""
    found = re.finditer(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\S+) ", hlo_text, re.M)
    return {m.group(1): m.group(2)[:60] for m in found}


def attribute(times, frame_of, chains, package: str = "jaxsched/"):
    """`(by_function, by_line)` Counters of µs: each thunk to its innermost frame inside `package`, or,
    without one, its enclosing thunk's (a threefry loop's body to the line that drew the key)."""
    by_fn: collections.Counter = collections.Counter()
    by_line: collections.Counter = collections.Counter()
    for (name, parent), us in times.items():
        frame = frame_of.get(name, frame_of.get(parent, -1))
        frames = [c for c in chains.get(frame, []) if package in c[0]]
        if not frames:
            kind = f"(no frame: {name.split('.')[0]})"
            by_fn[kind] += us
            by_line[kind] += us
            continue
        file, fn, line = frames[0]
        short = file.split(package, 1)[1]
        by_fn[f"{short}:{fn}"] += us
        by_line[f"{short}:{line} {fn}"] += us
    return by_fn, by_line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="dag", choices=("dag", "hpc"))
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=256, help="steps from reset before the trace")
    p.add_argument("--steps", type=int, default=32, help="steps a scan (one jitted call)")
    p.add_argument("--calls", type=int, default=4, help="scans traced")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--dag-max-events", type=int, default=1)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    env, params, action_fn = setup(a.env, a.dag_max_events)
    rollout = random_rollout(env, params, a.batch, a.steps, action_fn)

    keys = jax.random.split(jax.random.key(0), a.batch)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    # the scan compiled, and the envs past their episodes' first steps, before the trace
    calls = -(-a.warmup // a.steps) + a.calls
    call_keys = list(jax.random.split(jax.random.key(1), calls))
    for k in call_keys[: calls - a.calls]:
        obs, state, *_ = rollout(k, obs, state)
    jax.block_until_ready(state)
    compiled = rollout.lower(call_keys[0], obs, state).compile().as_text()
    frame_of, chains = stack_frames(compiled)
    with tempfile.TemporaryDirectory() as trace_dir:
        jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
        for k in call_keys[calls - a.calls :]:
            obs, state, *_ = rollout(k, obs, state)
        jax.block_until_ready(state)
        jax.profiler.stop_trace()
        times = thunk_times(trace_dir)
    by_fn, by_line = attribute(times, frame_of, chains)
    total = sum(times.values())
    info = platform_info()
    n_steps = a.calls * a.steps
    print(f"{a.env} batch {a.batch}: {total / 1e3 / n_steps:.2f} ms of thunks per step under the profiler "
          f"({info['cpu']}, {info['device']})")  # fmt: skip

    def rows(counter):
        return [[k, us / 1e3 / n_steps, us / total] for k, us in counter.most_common()]

    shapes = result_shapes(compiled)
    by_thunk: collections.Counter = collections.Counter()
    for (name, _), us in times.items():
        by_thunk[f"{name} {shapes.get(name, '?')}"] += us
    for title, counter in (("by function", by_fn), ("by line", by_line), ("by thunk", by_thunk)):
        print(f"\n{title}:")
        for k, ms, share in rows(counter)[: a.top]:
            print(f"  {ms:7.3f} ms {100 * share:5.1f} %  {k}")
    if a.json:
        record = {"env": a.env, "batch": a.batch, "steps": n_steps, "ms_per_step": total / 1e3 / n_steps}
        rows_of = {"by_function": rows(by_fn), "by_line": rows(by_line), "by_thunk": rows(by_thunk)}
        write_json(a.json, record | rows_of | info)


if __name__ == "__main__":
    main()

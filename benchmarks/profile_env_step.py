"""Where a batched env step spends its time, by source function and line: a `jax.profiler` trace of
`--steps` jitted steps (random valid actions, auto-reset on, as `env_throughput.py` runs them), each XLA
thunk's time attributed through the compiled module's stack frames to the innermost frame inside the
`jaxsched` package.

    python benchmarks/profile_env_step.py --env dag --batch 1024 --json F
    python benchmarks/profile_env_step.py --env hpc --batch 4096 --top 30

Times are under the profiler, which inflates small thunks: read the shares, not the milliseconds, and
time a change with `env_throughput.py` (interleaved before/after runs). Thunks without a stack frame
(copies, broadcasts and reduce windows XLA inserts) are listed by their kind. Records: {"by_function",
"by_line": [[name, ms per step, share]], "ms_per_step", "env", "batch", ...platform}.
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
    random_dag_action,
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
        return env, params, random_dag_action(env)
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
    """`{thunk name: µs}` summed over a perfetto trace written by `jax.profiler`."""
    path = sorted(glob.glob(f"{trace_dir}/plugins/profile/*/perfetto_trace.json.gz"))[-1]
    with gzip.open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    times: collections.Counter = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and not _RUNTIME.search(e["name"]):
            times[e["name"]] += e.get("dur", 0)
    return times


def attribute(times, frame_of, chains, package: str = "jaxsched/"):
    """`(by_function, by_line)` Counters of µs: each thunk to its innermost frame inside `package`."""
    by_fn: collections.Counter = collections.Counter()
    by_line: collections.Counter = collections.Counter()
    for name, us in times.items():
        frames = [c for c in chains.get(frame_of.get(name, -1), []) if package in c[0]]
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
    p.add_argument("--steps", type=int, default=50, help="steps traced")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--dag-max-events", type=int, default=1)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    env, params, action_fn = setup(a.env, a.dag_max_events)
    act = jax.vmap(action_fn)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def one(key, obs, state):
        k_act, k_step = jax.random.split(key)
        action = act(jax.random.split(k_act, a.batch), obs)
        obs, state, *_ = step(jax.random.split(k_step, a.batch), state, action, params)
        return obs, state

    keys = jax.random.split(jax.random.key(0), a.batch)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    # every key made, and the step compiled, before the trace: nothing but the step runs inside it
    step_keys = list(jax.random.split(jax.random.key(1), a.warmup + a.steps))
    for k in step_keys[: a.warmup]:
        obs, state = one(k, obs, state)
    jax.block_until_ready(state)
    frame_of, chains = stack_frames(one.lower(step_keys[0], obs, state).compile().as_text())
    with tempfile.TemporaryDirectory() as trace_dir:
        jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
        for k in step_keys[a.warmup :]:
            obs, state = one(k, obs, state)
        jax.block_until_ready(state)
        jax.profiler.stop_trace()
        times = thunk_times(trace_dir)
    by_fn, by_line = attribute(times, frame_of, chains)
    total = sum(times.values())
    info = platform_info()
    print(f"{a.env} batch {a.batch}: {total / 1e3 / a.steps:.2f} ms of thunks per step under the profiler "
          f"({info['cpu']}, {info['device']})")  # fmt: skip

    def rows(counter):
        return [[k, us / 1e3 / a.steps, us / total] for k, us in counter.most_common()]

    for title, counter in (("by function", by_fn), ("by line", by_line)):
        print(f"\n{title}:")
        for k, ms, share in rows(counter)[: a.top]:
            print(f"  {ms:7.3f} ms {100 * share:5.1f} %  {k}")
    if a.json:
        record = {"env": a.env, "batch": a.batch, "steps": a.steps, "ms_per_step": total / 1e3 / a.steps}
        write_json(a.json, record | {"by_function": rows(by_fn), "by_line": rows(by_line), **info})


if __name__ == "__main__":
    main()

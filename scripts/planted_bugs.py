"""Plant one-line bugs and check that the tests catch each one (docs/testing.md, "Planted bugs").

A bug list is a Python file that defines `BUGS`, tuples `(id, path, old, new, tests)`: `old` must occur
exactly once in `path` and is replaced by `new`; `tests` are the pytest arguments that should catch it
(files, `-k` expressions). It may define `EQUIVALENT = {id: why}` for bugs that change no behaviour (kept in
the list so that a later change making them observable shows up). Each bug is applied in a scratch clone of
the repository's committed HEAD (one clone is checked against the list, each worker clones that one; the
working tree is never touched; each result records the commit) and its tests run with `-x`, after each
test set passed once unmodified (a test failing already would catch every bug); one JSON line per bug:
`caught` (pytest exit 1), `escaped` (exit 0), or `error` (anything else, e.g. a hang past `--timeout`;
the exit code and the last lines are kept).

    python scripts/planted_bugs.py scripts/planted_bugs/dag.py --workers 2 --json runs/planted_dag.jsonl
    python scripts/planted_bugs.py scripts/planted_bugs/dag.py --only E13,F2

Run it on an otherwise idle machine: every bug compiles its programs anew (a minute or two each).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_bugs(path: Path) -> tuple[list[tuple], dict]:
    spec = importlib.util.spec_from_file_location("bug_list", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bugs = list(mod.BUGS)
    ids = [b[0] for b in bugs]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate bug ids")
    return bugs, dict(getattr(mod, "EQUIVALENT", {}))


def check_applies(bugs: list[tuple], root: Path) -> None:
    """Every `old` occurs exactly once in its file at `root` (else the list is stale: fail before running)."""
    for bug_id, path, old, _, _ in bugs:
        n = (root / path).read_text().count(old)
        if n != 1:
            raise SystemExit(f"bug {bug_id}: the text to replace occurs {n} times in {path}")


PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider"]


def run_tests(clone: Path, tests: str, timeout: float) -> tuple[int | None, str]:
    """`(exit code or None on a timeout, stdout)` of the tests in `clone`, stopping at the first failure."""
    # `python -m pytest` puts the clone first on sys.path: its `jaxsched`, not an installed one, is tested.
    # JAXSCHED_TEST_ORDER keeps the order named (conftest otherwise runs the heaviest files first), so the
    # pointed tests a list names first fail first.
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"), JAXSCHED_TEST_ORDER="given")
    try:
        p = subprocess.run(
            [*PYTEST, *shlex.split(tests)],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")


def check_baselines(clone: Path, bugs: list[tuple], timeout: float) -> None:
    """Every test set the bugs name passes on the unmodified code: a test failing already would count as
    catching every bug."""
    for tests in dict.fromkeys(b[4] for b in bugs):
        rc, out = run_tests(clone, tests, timeout)
        if rc != 0:
            failed = [ln for ln in out.splitlines() if ln.startswith("FAILED")][:3]
            raise SystemExit(f"the tests {tests!r} fail without any bug planted (exit {rc}): {failed}")
        print(f"baseline passes: {tests}", flush=True)


def run_one(clone: Path, bug: tuple, timeout: float) -> dict:
    bug_id, path, old, new, tests = bug
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--", "."], check=True)
    target = clone / path
    text = target.read_text()
    if text.count(old) != 1:  # never report an unplanted bug as escaped
        return {"id": bug_id, "outcome": "error", "rc": None, "seconds": 0,
                "tail": [f"the old text occurs {text.count(old)} times in {path}, not once"]}  # fmt: skip
    target.write_text(text.replace(old, new))
    start = time.time()
    rc, out = run_tests(clone, tests, timeout)
    outcome = {1: "caught", 0: "escaped"}.get(rc, "error")
    failed = [ln for ln in out.splitlines() if ln.startswith("FAILED")]
    summary = [ln for ln in out.splitlines() if re.search(r"\b\d+ (passed|failed|errors?)\b", ln)]
    tail = (failed + summary)[:3]  # the first failing test, then pytest's summary line
    return {"id": bug_id, "outcome": outcome, "rc": rc, "seconds": round(time.time() - start), "tail": tail}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bug_list", type=Path)
    ap.add_argument("--only", default="", help="comma-separated bug ids")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per bug (a hang is an error)")
    ap.add_argument("--json", type=Path, help="append one JSON line per bug here")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmodified run of each test set")
    args = ap.parse_args(argv)
    bugs, equivalent = load_bugs(args.bug_list)
    scratch = Path(tempfile.mkdtemp(prefix="planted-bugs-"))
    try:
        return _sweep(args, bugs, equivalent, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the clones (the JSON lines are the record)


def _sweep(args, bugs: list[tuple], equivalent: dict, scratch: Path) -> int:
    # the bugs are applied to clones of HEAD, so they are checked against one, not the working tree
    base = scratch / "baseline"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(base)], check=True)
    check_applies(bugs, base)
    commit = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    if args.only:
        wanted = set(args.only.split(","))
        bugs = [b for b in bugs if b[0] in wanted]
    todo: queue.Queue = queue.Queue()
    for b in bugs:
        todo.put(b)
    results, lock = [], threading.Lock()
    # tests that read ../shared/data find it beside each clone, as beside the repository
    if (ROOT.parent / "shared").exists():
        (scratch / "shared").symlink_to(ROOT.parent / "shared")

    if not args.no_baseline:
        check_baselines(base, bugs, args.timeout)

    def worker(i: int) -> None:
        clone = scratch / f"w{i}"
        # from the checked clone, not from the repository: a commit made meanwhile must not move the code
        subprocess.run(["git", "clone", "-q", str(base), str(clone)], check=True)
        while True:
            try:
                bug = todo.get_nowait()
            except queue.Empty:
                return
            res = run_one(clone, bug, args.timeout)
            res["commit"] = commit  # what the bug was planted in
            if bug[0] in equivalent:
                res["equivalent"] = equivalent[bug[0]]
            with lock:
                results.append(res)
                print(f"{res['id']:>4} {res['outcome']:8} {res['seconds']:5d} s  {(res['tail'] or [''])[0]}",
                      flush=True)  # fmt: skip
                if args.json:
                    args.json.parent.mkdir(parents=True, exist_ok=True)
                    with args.json.open("a") as f:
                        f.write(json.dumps(res) + "\n")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(max(1, args.workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missed = [r["id"] for r in results if r["outcome"] != "caught" and r["id"] not in equivalent]
    print(f"{len(results)} bugs: {sum(r['outcome'] == 'caught' for r in results)} caught; "
          f"not caught (equivalent ones aside): {', '.join(missed) or 'none'}")  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())

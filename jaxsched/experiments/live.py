"""A live line for work that prints nothing while it runs — building banks, tracing and compiling XLA
programs (minutes on a small CPU) — so a user sees what is happening from the first second.

    with live("compiling the training program", enabled=progress):
        compiled = chunk.lower(runner, params).compile()
    # on a terminal: "⠋ compiling the training program … 0:00:12" while it runs, then
    # "compiling the training program: 41.3 s"; in a log: "compiling the training program …" once the
    # work has taken `QUIET_S`, then the same end line

The spinner and the elapsed time are redrawn by rich's own thread, which runs while XLA compiles (the
compiler does not hold Python's lock). Work shorter than `QUIET_S` prints nothing, and work that raises
prints no end line (the error is the news); nothing at all when `enabled` is false.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

QUIET_S = 2.0  # below this, a step is not worth a line


@contextmanager
def live(what: str, enabled: bool = True):
    """While the body runs: `what` with a spinner and the elapsed time (on stderr); then one line with how
    long it took, when that was at least `QUIET_S`."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    t0 = time.perf_counter()
    timer = None
    if not console.is_terminal:  # a log: the start line once the work is worth one
        timer = threading.Timer(QUIET_S, lambda: print(f"{what} …", file=sys.stderr, flush=True))
        timer.daemon = True
        timer.start()
    columns = (SpinnerColumn(), TextColumn(f"{what} …"), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=True, disable=timer is not None) as bar:
            bar.add_task(what, total=None)
            yield
    finally:
        if timer is not None:
            timer.cancel()
    seconds = time.perf_counter() - t0
    if seconds >= QUIET_S:
        print(f"{what}: {seconds:.1f} s", file=sys.stderr, flush=True)

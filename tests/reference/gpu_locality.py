"""Plain-Python reference for SCED²'s GPU-locality cluster (the paper: ../shared/papers/001_*.txt),
written from the text: the packing placement of §II-B and the fragmentation metric of Eq. 1. The
simulator's reference grows here with the env."""

from __future__ import annotations


def packing(free: list[int], demand: int) -> list[int]:
    """GPUs taken per server: "first tries to find the server with the fewest free GPUs that can satisfy
    the job's GPU demand if possible. If there is no such server, the algorithm chooses the server with the
    most amount of free GPUs, and then the remaining GPU requirement will be satisfied by the above logic
    again" (§II-B). Ties: the lower server index. Assumes sum(free) >= demand."""
    left, take, rest = list(free), [0] * len(free), demand
    while rest > 0:
        fitting = [i for i, f in enumerate(left) if f >= rest]
        if fitting:
            i = min(fitting, key=lambda j: (left[j], j))
            amount = rest
        else:
            i = max(range(len(left)), key=lambda j: (left[j], -j))
            amount = left[i]
        left[i] -= amount
        take[i] += amount
        rest -= amount
    return take


def fragmentation(remaining: list[float]) -> float:
    """Eq. 1 for one server: 1 − (Σx)² / (n·Σx²); an idle server is 0."""
    sq = sum(x * x for x in remaining)
    if sq == 0:
        return 0.0
    return 1.0 - sum(remaining) ** 2 / (len(remaining) * sq)

"""One thread for the BLAS library under XLA's CPU LAPACK kernels.

On the CPU, jax's Cholesky, triangular-solve, QR and eigh kernels call LAPACK through scipy
(`scipy.linalg.cython_lapack`), whose OpenBLAS runs its own pool of worker threads. Those threads
busy-wait for work; beside XLA's own thread pool on the same cores they turn a batched kernel that takes
a few milliseconds into tens (a DAS MAPPO update with the RWGP head on the 2-core CPU: its 256 triangular
solves 6 ms on one core, 74 ms on two, the whole update 0.83 s against 0.65 s with one BLAS thread).
XLA already parallelises across the batch and around the kernel, so one BLAS thread loses nothing.

The CLI, the training benchmarks and the tests call `single_threaded_blas()` at start-up; a library user
training on the CPU (a notebook) can call it too. It limits every BLAS pool of the process (numpy's as
well: the host-side numpy work here is small).
"""

from __future__ import annotations


def single_threaded_blas() -> None:
    """Limit the process's BLAS thread pools (OpenBLAS, MKL, BLIS) to one thread, loading scipy's first:
    jax loads it lazily, at the first LAPACK call, after which its pool would be missed."""
    import scipy.linalg  # noqa: F401  (loads the library that jax's LAPACK kernels use)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # a plain call: the limit stays for the process

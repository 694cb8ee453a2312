"""jaxsched: JAX-native cluster-scheduling simulators and reinforcement-learning schedulers."""

__version__ = "0.1.0"

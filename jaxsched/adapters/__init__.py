"""Adapters from jaxsched's env contract to the APIs other RL code speaks (`gymnax`: gymnax's
`Environment`, for PureJaxRL-style loops)."""

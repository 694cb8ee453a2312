# Sourced by the GPU scripts (gpu_session.sh, gpu_dag.sh): the Python path for a lent machine. Wheels the
# machine's Python lacks (distrax with tfp-nightly, dm-tree, gast, decorator; flashbax) go in WHEELS
# (default .whl/, carried with the call) and are installed into /tmp/site; without that folder the
# installed packages are used.
export PYTHONUNBUFFERED=1
WHEELS=${WHEELS:-.whl}
if [ -d "$WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
    || exit 1
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi

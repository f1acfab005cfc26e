#!/usr/bin/env bash
# Runs oracle_replay.py with the test Python: $CUGYM_TEST_PYTHON if set, else the configured one
# ($1). Exits 77 (ctest's skip) with a message when that Python has no oracle (found, not imported:
# importing it takes seconds, and oracle_replay.py skips as well when the import fails).
# usage: run_oracle.sh CONFIGURED_PYTHON oracle_replay.py ARGS...
set -u
python=${CUGYM_TEST_PYTHON:-$1}
shift
if [ -z "$python" ] ||
   ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("minatar") is None)' >/dev/null 2>&1; then
  echo "SKIP: '${python:-no python}' cannot import minatar (the oracle); set CUGYM_TEST_PYTHON to a Python with minatar==1.0.15"
  exit 77
fi
exec "$python" "$@"

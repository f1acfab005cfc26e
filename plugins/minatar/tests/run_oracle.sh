#!/usr/bin/env bash
# Runs oracle_replay.py with the test Python: $CUGYM_TEST_PYTHON if set, else the configured one
# ($1). Exits 77 (ctest's skip) with a message when that Python cannot import the oracle.
# usage: run_oracle.sh CONFIGURED_PYTHON oracle_replay.py ARGS...
set -u
python=${CUGYM_TEST_PYTHON:-$1}
shift
if [ -z "$python" ] || ! "$python" -c 'import minatar' >/dev/null 2>&1; then
  echo "SKIP: '${python:-no python}' cannot import minatar (the oracle); set CUGYM_TEST_PYTHON to a Python with minatar==1.0.15"
  exit 77
fi
exec "$python" "$@"

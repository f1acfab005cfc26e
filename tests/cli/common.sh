# Shared by the command-line test scripts (sourced after setting $cugym): a scratch folder removed
# on exit, check counters, and the closing "N passed, N failed" line.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run ARGS...: one check running "$cugym" ARGS, output in $tmp/out and $tmp/err.
run() {
  checks=$((checks + 1))
  "$cugym" "$@" >"$tmp/out" 2>"$tmp/err"
}

# expect CODE PATTERN -- ARGS...: runs "$cugym" ARGS and checks the exit code and that stdout and
# stderr together match the extended regex PATTERN; an error (exit 2) must be one line.
expect() {
  local code=$1 pattern=$2
  shift 3
  run "$@"
  local got=$?
  if [ "$got" -ne "$code" ] || ! cat "$tmp/out" "$tmp/err" | grep -Eq -- "$pattern"; then
    fail "cugym $* -> exit $got (want $code), output:"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /'
  elif [ "$code" -eq 2 ] && [ "$(grep -c 'error' "$tmp/err")" -ne 1 ]; then
    fail "cugym $*: expected exactly one error line, got:"
    sed 's/^/    /' "$tmp/err"
  fi
}

summary() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}

#!/usr/bin/env bash
# Rehearses scripts/gpu-check.sh on the development machine in a bare Debian root that has only
# what the GPU image is sure to have: g++, CMake, ninja, python3 with its headers, numpy, nanobind,
# scikit-build-core and pytest (the image has more: cloudpickle and typing-extensions come too, for
# gymnasium), and the CUDA toolkit bind-mounted from this machine. No GoogleTest, OpenBLAS, SDL2 or
# Box2D, and no network (unshare -n): whatever the check needs beyond that must come from deps/.
#   scripts/gpu-check-rehearsal.sh [PARTS...]   default: first second (every device part), run with --rehearse
# Needs root. The first run installs debootstrap if missing and makes the root in build-bare/ (a
# minute, from Debian's packages and PyPI); later runs reuse it and its build-gpu* folders (delete
# build-bare/ to start anew). Run `bash scripts/gpu-check.sh deps` first. Each part's seconds end
# up in build-bare/root/repo/build-gpu/results/parts.txt. Then the deadline, rehearsed in the same
# root: `dqn speed python --rehearse` under CUGYM_GPU_CHECK_DEADLINE=40 with the dqn part made slow
# (CUGYM_GPU_CHECK_FAKE_SLOW=dqn:600) must end within 40 s with status 5, dqn cut off, speed and
# python skipped with their one line each (about 35 s; nothing built). Exit status: gpu-check's,
# or 1 where the deadline did not hold.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bare="$repo/build-bare/root"
parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(first second)

if [ "$(id -u)" -ne 0 ]; then echo "rehearsal: needs root (debootstrap, chroot, mounts)" >&2; exit 1; fi
if ! compgen -G "$repo/deps/debs/*.deb" >/dev/null; then
  echo "rehearsal: no deps/: run 'bash scripts/gpu-check.sh deps' first" >&2; exit 1
fi
cuda="$(readlink -f "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/..")"
[ -x "$cuda/bin/nvcc" ] || { echo "rehearsal: no CUDA toolkit (nvcc) here" >&2; exit 1; }

if [ ! -f "$bare/.ready" ]; then
  command -v debootstrap >/dev/null 2>&1 || apt-get install -y -q debootstrap >/dev/null
  echo "rehearsal: making the bare root in ${bare#"$repo"/}"
  rm -rf "$bare" && mkdir -p "$bare"
  debootstrap --variant=minbase --include=g++,cmake,ninja-build,python3,python3-dev,python3-pip bookworm "$bare" >/dev/null
  mkdir -p "$bare/tmp/wheels"
  python3 -m pip download -q -d "$bare/tmp/wheels" --python-version "$(chroot "$bare" python3 -c \
    'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')" --only-binary=:all: \
    numpy nanobind scikit-build-core pytest cloudpickle typing-extensions
  chroot "$bare" python3 -m pip install -q --break-system-packages --no-index --find-links /tmp/wheels \
    numpy nanobind scikit-build-core pytest cloudpickle typing-extensions
  touch "$bare/.ready"
fi

# The tree as a device call sends it: tracked and untracked-not-ignored files, and deps/ carried.
mkdir -p "$bare/repo"
find "$bare/repo" -mindepth 1 -maxdepth 1 ! -name 'build-gpu*' -exec rm -rf {} +
(cd "$repo" && { git ls-files -co --exclude-standard; find deps -type f; } | tar -cf - -T - | tar -xf - -C "$bare/repo")

mkdir -p "$bare$cuda" && ln -sfn "$cuda" "$bare/usr/local/cuda"
mounts=()
cleanup() { local m; for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
mount --bind "$cuda" "$bare$cuda" && mounts+=("$bare$cuda")
mount -t proc proc "$bare/proc" && mounts+=("$bare/proc")
mount --bind /dev "$bare/dev" && mounts+=("$bare/dev")

echo "rehearsal: unshare -n chroot ${bare#"$repo"/} bash scripts/gpu-check.sh ${parts[*]} --rehearse"
status=0
in_root() {  # in_root ENV... -- COMMAND: COMMAND in /repo of the bare root, without network
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  unshare -n chroot "$bare" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    "${env[@]}" bash -c "cd /repo && $*"
}
in_root -- bash scripts/gpu-check.sh "${parts[*]}" --rehearse || status=$?
echo "rehearsal: exit $status"

# The deadline: a part made slow is cut off at the deadline less the reports' reserve, the parts
# after it are skipped, and the call ends in time (no part builds: dqn sleeps before its probe).
echo "rehearsal: the deadline: dqn speed python --rehearse, 40 s, dqn made slow"
log="$bare/repo/build-gpu/deadline.log"
mkdir -p "$(dirname "$log")"
t0=$SECONDS
got=0
in_root CUGYM_GPU_CHECK_DEADLINE=40 CUGYM_GPU_CHECK_FAKE_SLOW=dqn:600 CUGYM_GPU_CHECK_RESULTS=/repo/build-gpu/results-deadline \
  -- bash scripts/gpu-check.sh dqn speed python --rehearse >"$log" 2>&1 || got=$?
took=$((SECONDS - t0))
grep '^gpu-check: ' "$log" || true
if [ "$got" -ne 5 ] || [ "$took" -gt 40 ] || ! grep -q '^gpu-check: part dqn cut off at its end' "$log" ||
   ! grep -q '^gpu-check: part speed skipped: ' "$log" || ! grep -q '^gpu-check: part python skipped: ' "$log"; then
  echo "rehearsal: the deadline did not hold: exit $got after $took s (want 5 within 40 s, dqn cut off, speed and python skipped)"
  exit 1
fi
echo "rehearsal: the deadline held: exit 5 after $took s"
exit "$status"

#!/usr/bin/env bash
# `cugym record` and `cugym watch` end to end: frame counts, valid PNG/GIF/MP4 files, no
# overwriting, and a window under a virtual X server whose screenshot is not blank. record runs in
# every build (no SDL needed); the window's checks run where `cugym --version` says SDL2 yes.
# usage: test_render_cli.sh CUGYM_BINARY
set -u
cugym=$1
source "$(dirname "$0")/common.sh"
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
window=no
"$cugym" --version | grep -q 'SDL2 yes' && window=yes

# A PNG decoder in Python (zlib only: independent of cugym's encoder and of libpng) that checks
# every chunk's CRC-32, the zlib stream (its Adler-32 too) and the size.
#   png.py count FILE R,G,B       prints "WxH N", N the pixels of that colour
#   png.py window FILE SHOT.rgb.. prints nothing if one of the raw 800x600 rgb24 screenshots shows
#                                 FILE below the heads-up line in its window (the non-black box), else
#                                 what each shows instead (the rows that differ)
cat >"$tmp/png.py" <<'PY'
import struct, sys, zlib
def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "signature"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, "CRC of " + kind.decode()
        if kind == b"IHDR": header = struct.unpack(">IIBBBBB", body)
        if kind == b"IDAT": idat += body
        pos += 12 + length
    w, h, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (8, 2, 0), header
    raw = zlib.decompress(idat)
    assert len(raw) == h * (3 * w + 1), "size"
    rows = [raw[r * (3 * w + 1):(r + 1) * (3 * w + 1)] for r in range(h)]
    assert all(row[0] == 0 for row in rows), "filter"  # cugym writes filter type 0
    return w, h, [row[1:] for row in rows]
w, h, rows = decode(sys.argv[2])
if sys.argv[1] == "count":
    want = bytes(int(v) for v in sys.argv[3].split(","))
    print("%dx%d %d" % (w, h, sum(1 for row in rows for k in range(0, len(row), 3) if row[k:k + 3] == want)))
else:
    def differing_rows(screen, sw=800):
        lit = [i // 3 for i in range(0, len(screen), 3) if screen[i:i + 3] != b"\0\0\0"]
        if not lit:
            return "no window on screen"
        x0, y0 = min(p % sw for p in lit), min(p // sw for p in lit)
        size = (max(p % sw for p in lit) - x0 + 1, max(p // sw for p in lit) - y0 + 1)
        if size != (w, h):
            return "a %dx%d box on screen, not the %dx%d window" % (size + (w, h))
        return " ".join(str(r) for r in range(30, h)
                        if screen[((y0 + r) * sw + x0) * 3:((y0 + r) * sw + x0 + w) * 3] != rows[r])
    # Any one screenshot showing the frame passes: the window appears when it appears.
    found = [differing_rows(open(path, "rb").read()) for path in sys.argv[3:]]
    print("" if "" in found else "; ".join(found))
PY
png_pixels() {
  command -v python3 >/dev/null 2>&1 || { echo skip; return 0; }
  python3 "$tmp/png.py" count "$1" "$2"
}

# --max-frames N writes exactly N frames, each a PNG.
run record --out "$tmp/frames" --max-frames 25 --num-envs 3 --device cpu || fail "record frames: $(cat "$tmp/err")"
count=$(ls "$tmp/frames" | grep -c '^frame_[0-9]\{5\}\.png$')
[ "$count" -eq 25 ] || fail "expected 25 frames, got $count"
is_png "$tmp/frames/frame_00024.png" || fail "frame_00024.png is not a PNG"

# A single PNG; then the same path again is refused and the file is kept.
run record --out "$tmp/one.png" --device cpu || fail "record one.png: $(cat "$tmp/err")"
is_png "$tmp/one.png" || fail "one.png is not a PNG"
# The frame decodes (CRCs, zlib stream, size) and shows CartPole's pole (202,152,101).
checks=$((checks + 1))
pixels=$(png_pixels "$tmp/one.png" 202,152,101) || fail "one.png does not decode: $pixels"
case "$pixels" in
  skip) echo "skip: python3 not installed, PNG contents not decoded" ;;
  "600x400 "*) [ "${pixels#* }" -gt 500 ] || fail "one.png shows no pole ($pixels)" ;;
  *) fail "one.png: unexpected size $pixels" ;;
esac
before=$(md5sum <"$tmp/one.png")
run record --out "$tmp/one.png" --device cpu --seed 9
[ $? -eq 2 ] && grep -q 'use --force' "$tmp/err" || fail "overwrote one.png without --force: $(cat "$tmp/err")"
[ "$(md5sum <"$tmp/one.png")" = "$before" ] || fail "one.png changed"
run record --out "$tmp/one.png" --device cpu --seed 9 --force || fail "--force refused"
run record --out "$tmp/frames" --max-frames 2 --device cpu
[ $? -eq 2 ] && grep -q 'already holds frames' "$tmp/err" || fail "overwrote frames without --force"

# Bad input: one line, exit 2.
run record --out /proc/cugym-test/x.png --device cpu
[ $? -eq 2 ] || fail "unwritable --out accepted"
run record --out "$tmp/x.webm" --device cpu
[ $? -eq 2 ] && grep -q 'unknown extension' "$tmp/err" || fail "unknown extension accepted"
run record --env Nope-v0 --out "$tmp/n.png"
[ $? -eq 2 ] && grep -q "unknown env 'Nope-v0'" "$tmp/err" || fail "unknown env accepted"
run record --out "$tmp/k.png" --num-envs 0 --device cpu
[ $? -eq 2 ] || fail "--num-envs 0 accepted"
expect 2 '^cugym record: error: --seed must be >= 0, got -1$' -- record --out "$tmp/neg.png" --seed -1 --device cpu
[ -e "$tmp/neg.png" ] && fail "record with a negative seed wrote a file"
if [ "$window" = yes ]; then
  expect 2 '^cugym watch: error: --seed must be >= 0, got -1$' -- watch --seed -1 --max-frames 1 --device cpu
  checks=$((checks + 1))
  env -u DISPLAY -u WAYLAND_DISPLAY "$cugym" watch --max-frames 3 --device cpu >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 2 ] && grep -q 'no display.*cugym record' "$tmp/err" || fail "watch without a display: $(cat "$tmp/err")"
else
  expect 2 '^cugym watch: error: this cugym was built without SDL2.*cugym record. works without it' -- \
    watch --max-frames 1 --device cpu
fi

# A trained model acts (and a model for another env is refused).
run train --env CartPole-v1 --device cpu --out "$tmp/run" --total-steps 2000 --set learning_starts=500 \
  --set eval_episodes=0 || fail "train for --model: $(cat "$tmp/err")"
run record --model "$tmp/run/model.safetensors" --out "$tmp/model-frames" --max-frames 12 --device cpu ||
  fail "record --model: $(cat "$tmp/err")"
[ "$(ls "$tmp/model-frames" | wc -l)" -eq 12 ] || fail "record --model wrote $(ls "$tmp/model-frames" | wc -l) frames"
run record --model "$tmp/run/model.safetensors" --env Acrobot-v1 --out "$tmp/acro.png" --device cpu
[ $? -eq 2 ] && grep -q 'does not fit Acrobot-v1' "$tmp/err" || fail "a model for another env was accepted: $(cat "$tmp/err")"
# Who acts is decided by --model alone; there is no --policy flag.
expect 2 "unknown flag '--policy'" -- record --policy random --out "$tmp/p.png" --device cpu

# GIF and MP4 through ffmpeg, when it is installed.
if command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1; then
  for ext in gif mp4; do
    run record --out "$tmp/ep.$ext" --max-frames 30 --device cpu || fail "record .$ext: $(cat "$tmp/err")"
    frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$tmp/ep.$ext")
    [ "$frames" = "30" ] || fail ".$ext has $frames frames, expected 30"
  done
  ls -a "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"
else
  echo "skip: ffmpeg/ffprobe not installed, GIF/MP4 not checked"
fi

# Box2D envs (when built): frames and a GIF offscreen, and the window below runs them too.
if "$cugym" list | grep -q LunarLander-v3; then
  run record --env LunarLander-v3 --out "$tmp/lunar" --max-frames 40 --num-envs 2 --device cpu ||
    fail "record LunarLander-v3: $(cat "$tmp/err")"
  [ "$(ls "$tmp/lunar" | wc -l)" -eq 40 ] || fail "expected 40 LunarLander frames"
  if command -v ffmpeg >/dev/null 2>&1; then
    run record --env LunarLanderContinuous-v3 --out "$tmp/lunar.gif" --max-frames 20 --device cpu ||
      fail "record LunarLanderContinuous-v3 GIF: $(cat "$tmp/err")"
  fi
  if [ "$window" = yes ] && command -v xvfb-run >/dev/null 2>&1; then
    checks=$((checks + 1))
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" xvfb-run -a -s "-screen 0 800x600x24" \
      "$cugym" watch --env LunarLander-v3 --num-envs 2 --max-frames 30 --fps 200 --device cpu >"$tmp/lwatch.out" 2>&1
    grep -q 'watched 30 frames' "$tmp/lwatch.out" || fail "watch LunarLander-v3 under Xvfb: $(cat "$tmp/lwatch.out")"
  fi
fi

# The window under Xvfb: exits 0 after --max-frames, and a screenshot taken while it runs shows
# the cart-pole (the pole's colour is on screen), not a blank screen. Four screenshots a second
# apart, the best counts: on a loaded machine the window may take a while to appear. Under LeakSanitizer the
# X11/D-Bus/GL libraries SDL loads for a window leak a few allocations of their own at exit,
# so leak checking is off for this one run (the offscreen tests keep it).
if [ "$window" = yes ] && command -v xvfb-run >/dev/null 2>&1 && command -v ffmpeg >/dev/null 2>&1; then
  checks=$((checks + 1))
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" xvfb-run -a -s "-screen 0 800x600x24" bash -c '
    "$1" watch --model "$2/run/model.safetensors" --num-envs 2 --max-frames 180 --fps 30 --device cpu >"$2/watch.out" 2>&1 & pid=$!
    for shot in 1 2 3 4; do
      sleep 1
      ffmpeg -loglevel error -f x11grab -video_size 800x600 -i "$DISPLAY" -frames:v 1 -f rawvideo -pix_fmt rgb24 \
        -y "$2/screen$shot.rgb"
    done
    wait $pid' _ "$cugym" "$tmp"
  rc=$?
  [ $rc -eq 0 ] && grep -q 'watched 180 frames' "$tmp/watch.out" || fail "watch under Xvfb: rc $rc, $(cat "$tmp/watch.out")"
  pole=0
  for shot in 1 2 3 4; do
    n=$(od -An -v -tu1 -w3 "$tmp/screen$shot.rgb" 2>/dev/null | grep -c '^ *202 *152 *101$')
    [ "$n" -gt "$pole" ] && pole=$n
  done
  [ "$pole" -gt 500 ] || fail "the screenshot shows no pole ($pole pole-coloured pixels)"

  # The window shows exactly the frame record writes: watch's first frame (the reset state of
  # seed 3), held on screen for 5 s by a slow --fps, against record's PNG of it, pixel for pixel
  # below the heads-up line (SDL2_ttf's text, drawn only in the window). A screenshot every half
  # second while the window runs, and one of them must match: under AddressSanitizer on a loaded
  # machine the window can take seconds to appear (one shot at 1 s once caught a blank screen).
  if command -v python3 >/dev/null 2>&1; then
    checks=$((checks + 1))
    "$cugym" record --seed 3 --out "$tmp/first.png" --device cpu >/dev/null 2>&1 || fail "record first.png"
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" xvfb-run -a -s "-screen 0 800x600x24" bash -c '
      "$1" watch --seed 3 --max-frames 2 --fps 0.2 --device cpu >"$2/watch1.out" 2>&1 & pid=$!
      for shot in $(seq 1 12); do
        sleep 0.5
        kill -0 $pid 2>/dev/null || break
        ffmpeg -loglevel error -f x11grab -draw_mouse 0 -video_size 800x600 -i "$DISPLAY" -frames:v 1 -f rawvideo \
          -pix_fmt rgb24 -y "$2/first$shot.rgb"
      done
      wait $pid' _ "$cugym" "$tmp"
    differ=$(python3 "$tmp/png.py" window "$tmp/first.png" "$tmp"/first*.rgb 2>&1)
    [ $? -eq 0 ] && [ -z "$differ" ] || fail "the window's frame differs from record's (rows: $differ)"
  fi
else
  echo "skip: no SDL2 window in this build, or xvfb-run or ffmpeg not installed: the window was not checked"
fi

summary

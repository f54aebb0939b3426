#!/usr/bin/env bash
# One device call (thirty-fourth session): bench_decode.py --graph with
# several libraries and knob settings in turn, ROUNDS rounds (order rotated):
# LIBS is a list of tag=carry_dir[:ENV=VALUE] entries. With CHECK_CARRY, that
# library's decode test --quick runs first (and with the pass-1 warm-up off).
# BD_ARGS: more bench_decode.py arguments (e.g. --head-dim 64, --short 1).
set -uo pipefail
CARRY=${CHECK_CARRY:-${CARRY:-.carry/s33final}}
source bench/device_common.sh
cp "$0" "$OUT/run.sh"
if [ -n "${CHECK_CARRY:-}" ]; then
  chmod +x "$C/test_attention_decode_sm90"
  LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" --quick > "$OUT/quick.log" 2>&1
  sum+=("decode --quick rc=$? $(count "$OUT/quick.log")")
  SAMEBITS_DECODE_PASS1_WARM=0 LD_LIBRARY_PATH=$C timeout 60 "$C/test_attention_decode_sm90" --quick > "$OUT/quick_off.log" 2>&1
  sum+=("decode --quick, warm-up off rc=$? $(count "$OUT/quick_off.log")")
  printf '%s\n' "${sum[@]}"
fi
read -r -a L <<< "${LIBS:?}"
for e in "${L[@]}"; do
  d=${e#*=}; d=${d%%:*}
  [ -f "$d/libsamebits.so" ] || python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$d/libsamebits.so.xz" "$d/libsamebits.so"
done
n=${#L[@]}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for i in $(seq 0 $((n - 1))); do
    e=${L[$(( (i + r - 1) % n ))]}
    tag=${e%%=*}; rest=${e#*=}; d=${rest%%:*}; envs=""; [ "$rest" != "$d" ] && envs=${rest#*:}
    env $envs PYTHONPATH=$PWD/python SAMEBITS_LIBRARY=$PWD/$d/libsamebits.so timeout 100 python3 bench/bench_decode.py \
      --out "$OUT/bd_${tag}_r$r" --graph --captures 2 --reps 15 --no-flex ${BD_ARGS:-} \
      --shapes ${SHAPES:-1x4096,2x2048,1x8192,1x16384,1x32768,8x2048,4x1024} > "$OUT/bd_${tag}_r$r.log" 2>&1
    echo "== $tag round $r rc=$?"; grep -E '^\| [0-9]' "$OUT/bd_${tag}_r$r.log"
  done
done
python3 bench/ab_summary.py "$OUT" > "$OUT/ab_summary.txt" 2>&1; sed "s/^/== ab /" "$OUT/ab_summary.txt"
printf '%s\n' "${sum[@]}" > "$OUT/summary.txt"
cd "$OUT" && tar czf logs.tgz --exclude logs.tgz --exclude summary.txt . 
find "$OUT" -maxdepth 1 -type f -name '*.log' -delete
find "$OUT" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +

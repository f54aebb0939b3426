# Sourced by the bench/device_bwd_*.sh scripts (one device call each): the
# carried build $C (an xz-compressed libsamebits.so beside the test
# binaries), the output folder $OUT, the GPU's name in $OUT/gpu.txt, and
# two helpers that read a test log.
set -uo pipefail
C=$PWD/${CARRY:-.carry/pipe}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
sum=()
# Always decompressed: the device keeps ignored files of earlier calls.
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  "$C/libsamebits.so.xz" "$C/libsamebits.so"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
count() { echo "pass=$(grep -c '^\[PASS\]' "$1") fail=$(grep -c '^\[FAIL\]' "$1")"; }
hashes() { grep -o 'hash [0-9a-f]\{16\}' "$1" | sort -u | tr '\n' ' '; }

# device call 15 (library .carry/gemmc, built from 43a02ee; the GEMM default unchanged from main):
# issue 6's 76 points, the default entry against cuBLAS, with each L2 flush, alternated twice
CARRY=.carry/gemmc source bench/device_common.sh >/dev/null; P=(env SAMEBITS_LIBRARY=$C/libsamebits.so PYTHONPATH=python:bench)
S=""; for nk in 4096x4096 14336x4096 4096x14336 128256x4096; do for m in 1 16 64 128 192 256 384 512 640 768 896 1024 1152 1280 1536 1792 2048 4096 16384; do S="$S${S:+,}${m}x$nk"; done; done
for f in read write read write; do "${P[@]}" timeout 200 python3 bench/gemm_cluster_probe.py --configs default --flush $f --shapes $S --reps 15 --out $OUT/sweep_${f}_$RANDOM.json; done
# call 14: the same with 14 shapes and --reps 21 (call14_subset_*.json: the last run of each flush)

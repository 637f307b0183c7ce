#!/usr/bin/env bash
# Part 4 of step 11's unbiased-rounding checks: the rest of step 11's GPU tests (those part 3's call
# left unrun), compute-sanitizer on the changed kernels at odd shapes, and the families at
# 1024×1024×4096.
set -u
R="bash .gpu/run"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash .gpu/run list >/dev/null
dir=$(ls -d /tmp/gpu-bundle-*/ | head -1)
b=$(for x in "$dir"/tests/*; do "$x" --list 2>/dev/null | grep -q "^gpu_coherent_half_integers_pass_and_rounding_to_nearest_fails: test" && echo "$x"; done | head -1)
echo "=== step 11's GPU tests: $(basename "$b")"
timeout 230 "$b" --include-ignored --test-threads=1 --skip gpu_planted_faults_are_caught --skip gpu_coherent \
  --skip gpu_documented_sets --skip gpu_error_ gpu_ 2>&1 | tee $OUT/tests4.log | grep -vE '^test .* ok$' | grep -v '^$' | tail -12
cs=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  for shape in "-m 17 -n 33 -k 9" "-m 127 -n 129 -k 65" "-m 67 -n 45 -k 129 --moduli 9"; do
    echo "== $tool $shape: $(timeout 60 $cs --tool $tool --error-exitcode 9 "$dir/bin/step11_int8_crt" $shape --reps 1 --no-cublas 2>&1 | grep -E 'ERROR SUMMARY|verify' | tr '\n' ' ')"
  done
done
python3 scripts/families-inputs.py /tmp/fm 1024 1024 4096 > /tmp/pairs
pairs=$(grep -o -- '--pair [^ ]*' /tmp/pairs | tr '\n' ' ')
echo "== compare --families -m 1024 -n 1024 -k 4096"
timeout 170 $R bin compare --families -m 1024 -n 1024 -k 4096 $pairs --out /tmp/fam1024 2>&1 | grep -E "^\| " | cut -d'|' -f2,3,6,7,8,10,11,12,13
cp /tmp/fam1024/*.md $OUT/ 2>/dev/null

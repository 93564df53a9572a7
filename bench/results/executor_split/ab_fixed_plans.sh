#!/bin/bash
# Interleaved A/B of the executor: same plan JSON, before and after binaries.
# usage: ab_bench.sh OUTFILE MODEL... ; env ROUNDS (default 3), REPEAT (default 20)
OUT=$1; shift
ROUNDS=${ROUNDS:-3}; REPEAT=${REPEAT:-20}
cd /work/wt/exec
mkdir -p /tmp/ab_plans
for m in "$@"; do
  for kind in optimal greedy-fusion; do
    [ -f /tmp/ab_plans/$m.$kind.json ] || /tmp/orchid_before orchestrate models/$m.onnx --device cpu --plan-kind $kind --json /tmp/ab_plans/$m.$kind.json > /dev/null 2>&1
  done
done
for r in $(seq $ROUNDS); do
  for m in "$@"; do
    for kind in optimal greedy-fusion; do
      order="before after"; [ $((r % 2)) = 0 ] && order="after before"
      for which in $order; do
        bin=/tmp/orchid_before; [ $which = after ] && bin=/work/wt/exec/build/orchid
        line=$(OMP_NUM_THREADS=${THREADS:-1} $bin run models/$m.onnx --plan /tmp/ab_plans/$m.$kind.json --repeat $REPEAT 2>&1 | grep '^time')
        echo "$r $m $kind $which $(uptime | sed 's/.*average: //' | cut -d, -f1) $line" >> $OUT
      done
    done
  done
done
echo DONE >> $OUT

#!/bin/bash
# One guest boot: afrdma-perf one stream, copy vs MSG_ZEROCOPY with the
# receive zero-copy off (rx_zerocopy_min=0) and on (65536).
K=$1
cd "$(dirname "$0")/../.." || exit 1
[ -d /sys/module/afrdma ] || insmod build/$K/net/afrdma/afrdma.ko || exit 1
A=$AFRDMA_ADDR
ncpu=$(grep -c '^cpu[0-9]' /proc/stat)
port=7300
idle() { read -r _ _ _ _ i w _ < /proc/stat; echo $((i + w)); }
stat() { awk -v k=$1 '$1 == k { print $2 }' /proc/net/afrdma_stat; }
echo "uname $(uname -r) ncpu $ncpu"
for rep in $(seq "${REPS:-3}"); do
for size in 256K 1M; do
for mode in copy zc-rxoff zc-rxon; do
	port=$((port + 1))
	case $mode in
	copy) z=""; echo 65536 > /proc/sys/net/afrdma/rx_zerocopy_min ;;
	zc-rxoff) z=-z; echo 0 > /proc/sys/net/afrdma/rx_zerocopy_min ;;
	zc-rxon) z=-z; echo 65536 > /proc/sys/net/afrdma/rx_zerocopy_min ;;
	esac
	./tools/afrdma-perf server -a $A -p $port -1 > /dev/null 2>&1 &
	spid=$!
	sleep 1
	s0=$(stat SrcAvailSent); r0=$(stat RxZeroCopyBytes)
	i0=$(idle); w0=$EPOCHREALTIME
	out=$(./tools/afrdma-perf client -a $A -p $port -s $size -d 4 $z -j 2>&1)
	i1=$(idle); w1=$EPOCHREALTIME
	wait $spid
	s1=$(stat SrcAvailSent); r1=$(stat RxZeroCopyBytes)
	busy=$(awk -v i0=$i0 -v i1=$i1 -v w0=$w0 -v w1=$w1 -v n=$ncpu 'BEGIN { t = (w1 - w0) * 100 * n; printf "%.0f", 100 * (t - (i1 - i0)) / t }')
	echo "rep $rep size $size mode $mode busy% $busy srcavail $((s1 - s0)) rxzcbytes $((r1 - r0)) $out"
done
done
done

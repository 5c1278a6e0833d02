#!/usr/bin/env bash
# `pip install` with its downloads held in RAM when RAM has room: tools/pip-install.sh PYTHON ARGS...
#
# pip keeps every wheel it downloads until the whole install ends, so the train extra (torch with
# its CUDA libraries) needs its wheels and its installed files on disk at the same time. Machines
# of our kind differ widely in free disk, and CI has twice run out of it in this install. /dev/shm
# is a tmpfs (RAM); when it has 4 GiB free the wheels go there and the disk's peak is the
# installed files alone (figures in docs/performance.md, "Install footprint").
set -euo pipefail
python=$1
shift
need_kib=$((4 * 1024 * 1024))
if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 {print $4}')" -ge "$need_kib" ]; then
  tmp=$(mktemp -d -p /dev/shm a01gym-pip.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  export TMPDIR=$tmp
fi
"$python" -m pip install "$@"

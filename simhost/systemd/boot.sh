#!/bin/bash
# PID 1 of a fresh PID + mount + UTS + IPC + cgroup namespace (started by simhost.systemd.namespace):
# builds an overlay of / whose writes land in a throwaway tmpfs, private /proc /sys /dev /run /tmp,
# binds the simulated host's state dir and the source tree at their own paths, then pivots into the
# overlay and execs systemd 252 on a target of ours. Nothing here may write to the real root.
#
# Usage: boot.sh STATE SETUP [BIND...]   STATE: a directory of ours (the overlay lives in a tmpfs on it);
#        SETUP: a script run (chrooted) in the new root before systemd starts; BIND: paths bound as is.
set -euo pipefail
state=$1; setup=$2; shift 2
mount --make-rprivate /
mkdir -p "$state/ovl"
mount -t tmpfs -o mode=755,size=16g pitcrew-sim "$state/ovl"
mkdir -p "$state/ovl/upper" "$state/ovl/work" "$state/ovl/root"
mount -t overlay pitcrew-sim -o "lowerdir=/,upperdir=$state/ovl/upper,workdir=$state/ovl/work" "$state/ovl/root"
r=$state/ovl/root
mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys"
mount -t tmpfs -o mode=755,nosuid,nodev,noexec cgroup "$r/sys/fs/cgroup"
mkdir -p "$r/sys/fs/cgroup/systemd" "$r/sys/fs/cgroup/unified"
mount -t cgroup -o none,name=systemd,nosuid,nodev,noexec cgroup "$r/sys/fs/cgroup/systemd"
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$r/sys/fs/cgroup/unified"
mount -t tmpfs -o mode=755,nosuid dev "$r/dev"
for n in null zero full random urandom tty; do
  touch "$r/dev/$n"; mount --bind "/dev/$n" "$r/dev/$n"
done
mkdir -p "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"; ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"; ln -s /proc/self/fd/1 "$r/dev/stdout"; ln -s /proc/self/fd/2 "$r/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm"
mount -t tmpfs -o mode=755,nosuid,nodev run "$r/run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$r/tmp"
for b in "$@"; do
  mkdir -p "$r$b"; mount --bind "$b" "$r$b"
done
chroot "$r" /bin/bash -s < "$setup"
cd "$r"
mkdir -p .pivot
pivot_root . .pivot
umount -l /.pivot
rmdir /.pivot
exec env -i container=pitcrew-simhost PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd --system \
  --unit=pitcrew-sim.target --log-target=journal-or-kmsg

#!/usr/bin/env bash
# prepare.sh STATE: everything tests/test_container.py needs to build and run the image for real,
# with no Docker engine and no container registry:
#   - buildah, podman, runc, debootstrap (apt-get, as root, when missing);
#   - its own podman/buildah configuration and storage (overlay, else vfs) under STATE, kept
#     between runs and apart from any other podman user on this machine;
#   - the base image docker.io/library/python:3.11-slim: pulled when a registry answers, else a
#     local stand-in made once with debootstrap (Debian bookworm's Python 3.11 at /usr/local/bin,
#     like the official image), good for a smoke test, not for size or version checks.
# Exit 0 ready, 3 not root or a tool missing under MDBOOST_TEST_NO_INSTALL=1 (the test skips
# outside CI), anything else a failure.
set -euo pipefail
STATE=${1:?usage: prepare.sh STATE_DIR}
BASE=docker.io/library/python:3.11-slim
log() { echo "prepare: $*" >&2; }
if [ "$(id -u)" != 0 ]; then
  log "needs root: buildah, podman and debootstrap run as root here"
  exit 3
fi
mkdir -p "$STATE"
# One at a time: test runs of several engineers may share this machine and STATE.
exec 9>"$STATE/prepare.lock"
flock 9

missing=
for tool in buildah podman runc debootstrap; do
  command -v "$tool" >/dev/null || missing="$missing $tool"
done
if [ -n "$missing" ] && [ "${MDBOOST_TEST_NO_INSTALL:-}" = 1 ]; then
  log "missing:$missing, and MDBOOST_TEST_NO_INSTALL=1 installs nothing"
  exit 3
fi
if [ -n "$missing" ]; then
  log "installing buildah podman runc debootstrap uidmap (apt-get; missing:$missing)"
  # tests/apt.py's lock: the suite's other process may be installing a tool at the same time.
  wait="-o DPkg::Lock::Timeout=600"
  flock /var/lock/mdboost-apt.lock apt-get $wait update -q >"$STATE/apt.log" 2>&1
  DEBIAN_FRONTEND=noninteractive flock /var/lock/mdboost-apt.lock \
    apt-get $wait install -y -q buildah podman runc debootstrap uidmap \
    >>"$STATE/apt.log" 2>&1 || { log "apt-get failed, see $STATE/apt.log"; exit 1; }
fi

# overlay, like Docker on DSM, when this kernel mounts it here; else vfs, which copies the whole
# root filesystem for every container and layer (seconds to minutes each). Each driver keeps its
# own store. runc + cgroupfs: crun refuses hybrid cgroup v1+v2 hosts. ulimits: podman raises
# RLIMIT_NOFILE to 1048576 by default, which needs CAP_SYS_RESOURCE; cap them at the hard limits.
probe="$STATE/overlay-probe"
mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
driver=vfs
if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
  "$probe/merged" 2>/dev/null; then
  umount "$probe/merged"
  driver=overlay
fi
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
{ [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ]; } && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
cat >"$STATE/storage.conf" <<CONF
[storage]
driver = "$driver"
runroot = "$STATE/run-$driver"
graphroot = "$STATE/storage-$driver"
CONF
cat >"$STATE/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
export CONTAINERS_STORAGE_CONF="$STATE/storage.conf" CONTAINERS_CONF="$STATE/containers.conf"

if podman image exists "$BASE"; then
  exit 0
fi
if podman pull -q "$BASE" >"$STATE/pull.log" 2>&1; then
  log "pulled $BASE"
  exit 0
fi
log "no registry reachable ($(tail -n1 "$STATE/pull.log")): making a local stand-in for $BASE"

mirror=$(grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian\b' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null \
  | awk 'NR == 1 {print $2}' || true)
mirror=${mirror:-http://deb.debian.org/debian}
root="$STATE/rootfs"
umount "$root/proc" 2>/dev/null || true
rm -rf "$root"
log "debootstrap bookworm from $mirror (about a minute; log: $STATE/debootstrap.log)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$STATE/debootstrap.log" 2>&1 \
  || { log "debootstrap failed, see $STATE/debootstrap.log"; exit 1; }
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
rc=0
chroot "$root" /bin/sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  --no-install-recommends python3 python3-venv python3-pip ca-certificates \
  && apt-get clean && rm -rf /var/lib/apt/lists/*' >"$STATE/python.log" 2>&1 || rc=$?
umount "$root/proc"
: >"$root/etc/resolv.conf"
[ "$rc" = 0 ] || { log "installing python3 in the stand-in failed, see $STATE/python.log"; exit 1; }

# Trust what this machine trusts beyond Debian's CA set (a TLS-inspecting proxy's CA, say), so
# that pip in the Dockerfile's RUN steps reaches PyPI as this machine does.
python3 - "$root" <<'PY'
import pathlib, re, sys
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
root = pathlib.Path(sys.argv[1])
debian = set()
for path in (root / "usr/share/ca-certificates/mozilla").iterdir():
    debian.update(pem.findall(path.read_text()))
host = pem.findall(pathlib.Path("/etc/ssl/certs/ca-certificates.crt").read_text())
extra = root / "usr/local/share/ca-certificates"
extra.mkdir(parents=True, exist_ok=True)
for number, cert in enumerate(c for c in host if c not in debian):
    (extra / f"host-extra-{number:02d}.crt").write_text(cert + "\n")
PY
chroot "$root" update-ca-certificates >/dev/null 2>&1
# Look like the official image: python and pip in /usr/local/bin, pip allowed outside a venv.
for name in python python3; do ln -sf /usr/bin/python3 "$root/usr/local/bin/$name"; done
for name in pip pip3; do ln -sf /usr/bin/pip3 "$root/usr/local/bin/$name"; done
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$root/etc/pip.conf"

tar -C "$root" --numeric-owner -cf "$STATE/rootfs.tar" .
podman import -q \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
  "$STATE/rootfs.tar" "$BASE" >/dev/null
rm -rf "$STATE/rootfs.tar" "$root"
log "stand-in $BASE ready"

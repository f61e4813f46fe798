"""Boot Debian's own kernel in QEMU with real md arrays and run a script inside it as root.

This machine's kernel has no md driver; Debian's kernel has md as modules. The image (the
kernel plus an initramfs root with mdadm and python3) is built once with debootstrap and cached
outside the repository, under a key made of everything that went into it. Each boot gets fresh
sparse virtual disks (/dev/vda, /dev/vdb, ...), the repository mounted read-only at its own
absolute path (so its .venv, built with Debian's /usr/bin/python3, runs unchanged), and a run
directory mounted at /mnt/host where the script's results ($OUT) come back.

The kernel is one of three generations (KERNELS): Debian 12's 6.1 (the default), 11's 5.10 (the
generation Synology's DSM 7.2 runs on many models) and 13's 6.12. Each comes from the configured
Debian mirror: bookworm's through apt, the others from their suite's Packages index, checked
against the suite's signed InRelease (gpgv with debian-archive-keyring) and the .deb's SHA256.
The userland (mdadm, python3) is bookworm's on all three. REALKERNEL_KERNEL picks the kernel of a
test session (default 6.1).

Command line (used by scripts/bench_realkernel.py, handy by hand):
    .venv/bin/python tests/realkernel/vmharness.py [--kernel 5.10] build
    .venv/bin/python tests/realkernel/vmharness.py [--kernel 5.10] run GUEST_SCRIPT.sh  # prints the run directory
    .venv/bin/python tests/realkernel/vmharness.py [--kernel 5.10] capture  # refresh its fixtures
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GUEST_INIT = HERE / "guest" / "init"
CACHE_ROOT = Path(os.environ.get("REALKERNEL_CACHE", Path.home() / ".cache" / "mdboost-vm"))
SUITE = "bookworm"  # the guest's userland, on every kernel
# Kernel generation -> the Debian suite whose newest linux-image-<version>-amd64 it boots.
KERNELS = {"5.10": "bullseye", "6.1": "bookworm", "6.12": "trixie"}
DEFAULT_KERNEL = "6.1"
APT_LOCK = Path("/var/lock/mdboost-apt.lock")
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
HOST_PACKAGES = ("qemu-system-x86", "debootstrap", "cpio", "kmod")
GUEST_PACKAGES = (
    "mdadm",
    "python3",
    "kmod",
    "procps",
    "util-linux",
    "fdisk",
    "iproute2",
    "busybox-static",
)
GUEST_MODULES = (
    "virtio_pci",
    "virtio_blk",
    "virtio_net",
    "9p",
    "9pnet_virtio",
    "md_mod",
    "linear",
    "raid0",
    "raid1",
    "raid10",
    "raid456",
)
# Directories of the debootstrapped root the guest never needs (keeps the initramfs ~120 MB).
TRIM = ("var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info")
TRIM += (
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/zoneinfo",
    "usr/lib/x86_64-linux-gnu/gconv",
)
MDADM_CONF = (
    "DEVICE partitions\nCREATE owner=root group=disk mode=0660 auto=yes\nMAILADDR root\nAUTO -all\n"
)


# A boot that has not reached /init by then hung (seen once under emulation on a loaded host):
# it is killed and booted once more. A healthy boot is ready in ~7 s; on a machine at load 30
# (2 cores) one took 104 s and another more than 240 s without being hung.
READY_TIMEOUT_S = 600
CAPTURE_DISK_MIB = 256  # small disks: every sync in the capture scenario ends in seconds


class HarnessUnavailable(RuntimeError):
    """The VM cannot be built or booted here (and may not be installed): the reason says why."""


@dataclass(frozen=True)
class Image:
    kernel: Path
    initramfs: Path
    kernel_version: str  # uname -r of the guest, e.g. "6.1.0-37-amd64"
    mdadm_version: str  # Debian package version of mdadm in the guest

    @property
    def generation(self) -> str:
        """ "5.10", "6.1" or "6.12": the key of KERNELS this image's kernel belongs to."""
        return generation_of(self.kernel_version)


def generation_of(version: str) -> str:
    """The major.minor of a kernel release or package name ("linux-image-6.12.57+deb13-amd64")."""
    digits = version.rpartition("linux-image-")[2]
    major, minor = digits.split(".")[:2]
    return f"{major}.{''.join(c for c in minor if c.isdigit())}"


def selected_kernel() -> str:
    """The kernel generation of this session: REALKERNEL_KERNEL, else 6.1 (checked)."""
    return check_kernel(os.environ.get("REALKERNEL_KERNEL") or DEFAULT_KERNEL)


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}: one of {', '.join(KERNELS)}")
    return kernel


def fixtures_dir(kernel: str) -> Path:
    """Where the states captured from one kernel generation live (6.1's came first)."""
    name = "kernel" if kernel == DEFAULT_KERNEL else f"kernel-{check_kernel(kernel)}"
    return REPO / "tests" / "fixtures" / name


@dataclass
class GuestRun:
    run_dir: Path
    rc: int | None  # exit code of the guest script; None if the guest never finished it
    wall_s: float  # host seconds from qemu start to exit
    ready_s: float | None  # guest uptime when /init was ready to run the script
    console: str = field(repr=False)

    @property
    def out(self) -> Path:
        return self.run_dir / "out"

    def guest_log(self) -> str:
        log = self.out / "guest.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def describe(self) -> str:
        """Enough of the logs to diagnose a failed run from a test report."""
        return (
            f"guest rc={self.rc} wall={self.wall_s:.1f}s run_dir={self.run_dir}\n"
            f"--- guest.log (tail) ---\n{self.guest_log()[-6000:]}\n"
            f"--- console (tail) ---\n{self.console[-3000:]}"
        )


def log(message: str) -> None:
    print(f"[vmharness {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _run(cmd: Sequence[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], check=True, text=True, **kwargs)  # type: ignore[call-overload]


def _is_root() -> bool:
    return os.geteuid() == 0


def ensure_host_tools() -> None:
    """Install qemu, debootstrap, cpio and kmod with apt-get when missing (root only)."""
    missing = [p for p in HOST_PACKAGES if not _dpkg_installed(p)]
    if not missing:
        return
    if os.environ.get("MDBOOST_TEST_NO_INSTALL") == "1":  # tests/apt.py's switch
        raise HarnessUnavailable(
            f"host packages missing ({' '.join(missing)}) and MDBOOST_TEST_NO_INSTALL=1 "
            f"installs nothing: run `apt-get install {' '.join(missing)}` as root"
        )
    if not _is_root() or shutil.which("apt-get") is None:
        raise HarnessUnavailable(
            f"host packages missing ({' '.join(missing)}) and cannot install them without root "
            f"and apt-get: run `apt-get install {' '.join(missing)}` as root"
        )
    log(f"apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    wait = ["-o", "DPkg::Lock::Timeout=600"]  # another session may be installing something
    with _locked(APT_LOCK):  # tests/apt.py's lock: the suite's other process may install too
        _run(["apt-get", *wait, "update", "-q"], env=env, stdout=subprocess.DEVNULL)
        _run(
            ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", *missing],
            env=env,
            stdout=subprocess.DEVNULL,
        )


def _dpkg_installed(package: str) -> bool:
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return result.stdout == "install ok installed"


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise builds between concurrent test sessions on one machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def _building(dest: Path, marker: str = "done") -> Iterator[Path]:
    """A scratch folder that becomes dest (with its marker file) only if the build succeeds."""
    work = Path(tempfile.mkdtemp(dir=CACHE_ROOT, prefix=f"{dest.name}.tmp-"))
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    (work / marker).touch()
    shutil.rmtree(dest, ignore_errors=True)
    work.rename(dest)


def _mirror() -> str:
    for source in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]:
        with contextlib.suppress(OSError):
            for word in source.read_text().split():
                if word.startswith("http") and word.rstrip("/").endswith("/debian"):
                    return word
    return "http://deb.debian.org/debian"


def _kernel_package() -> str:
    def depends() -> str:
        return subprocess.run(
            ["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True
        ).stdout

    text = depends()
    if "Depends: linux-image-" not in text:
        _run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)
        text = depends()
    for line in text.splitlines():
        name = line.split("Depends:")[-1].strip()
        if name.removeprefix("linux-image-")[:1].isdigit():
            return name
    raise HarnessUnavailable("apt-cache finds no linux-image-<version>-amd64 package")


def _build_kernel(package: str) -> Path:
    """Unpack Debian's kernel package: vmlinuz plus its modules."""
    dest = CACHE_ROOT / f"kernel-{package}"
    if (dest / "done").exists():
        return dest
    log(f"downloading {package}")
    with _building(dest) as work:
        _run(
            ["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", package],
            cwd=work,
            stdout=subprocess.DEVNULL,
        )
        (deb,) = work.glob("*.deb")
        _run(["dpkg-deb", "-x", deb, work / "root"])
        deb.unlink()
    return dest


def _fetch(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=120) as answer, dest.open("wb") as out:
        shutil.copyfileobj(answer, out)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _suite_kernel(suite: str, work: Path) -> tuple[str, str, str]:
    """The newest linux-image-<version>-amd64 of a suite: (package, filename, sha256), from its
    Packages index, itself checked against the suite's InRelease signed by Debian's archive key."""
    mirror = _mirror().rstrip("/")
    release = work / "InRelease"
    _fetch(f"{mirror}/dists/{suite}/InRelease", release)
    if not KEYRING.exists():
        raise HarnessUnavailable(f"{KEYRING} missing: apt-get install debian-archive-keyring")
    signed = subprocess.run(
        ["gpgv", "--keyring", KEYRING, "--output", "-", release], capture_output=True, check=False
    )
    if signed.returncode != 0:
        raise HarnessUnavailable(f"{suite} InRelease: bad signature: {signed.stderr[-300:]!r}")
    index = "main/binary-amd64/Packages.xz"
    wanted = next(
        (
            line.split()[0]
            for line in signed.stdout.decode().split("SHA256:", 1)[1].splitlines()
            if line.split()[2:3] == [index]
        ),
        None,
    )
    if wanted is None:
        raise HarnessUnavailable(f"{suite} InRelease lists no {index}")
    packed = work / "Packages.xz"
    _fetch(f"{mirror}/dists/{suite}/{index}", packed)
    if _sha256(packed) != wanted:
        raise HarnessUnavailable(f"{suite} {index}: SHA256 differs from InRelease")
    best: tuple[str, str, str, str] | None = None  # version, package, filename, sha256
    for stanza in lzma.decompress(packed.read_bytes()).decode().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        package = fields.get("Package", "")
        if not re.fullmatch(r"linux-image-\d[^ ]*-amd64", package):
            continue
        if package.endswith(("-rt-amd64", "-cloud-amd64")) or "-unsigned" in package:
            continue
        version = fields["Version"]
        if best is None or _version_gt(version, best[0]):
            best = (version, package, fields["Filename"], fields["SHA256"])
    packed.unlink()
    if best is None:
        raise HarnessUnavailable(f"no linux-image-<version>-amd64 in {suite}")
    return best[1], best[2], best[3]


def _version_gt(a: str, b: str) -> bool:
    compare = ["dpkg", "--compare-versions", a, "gt", b]
    return subprocess.run(compare, check=False).returncode == 0


def _build_suite_kernel(suite: str) -> Path:
    """Another suite's kernel package, SHA256-checked, unpacked like bookworm's."""
    with tempfile.TemporaryDirectory(dir=CACHE_ROOT) as scratch:
        package, filename, sha256 = _suite_kernel(suite, Path(scratch))
    # Named apart from bookworm's kernel-linux-image-*: a harness older than the kernel option
    # takes the newest of those, and must keep finding 6.1 in a cache shared with this one.
    dest = CACHE_ROOT / f"kernel-{suite}-{package}"
    if (dest / "done").exists():
        return dest
    log(f"downloading {package} ({suite})")
    with _building(dest) as work:
        deb = work / Path(filename).name
        _fetch(f"{_mirror().rstrip('/')}/{filename}", deb)
        if _sha256(deb) != sha256:
            raise HarnessUnavailable(f"{filename}: SHA256 differs from {suite}'s Packages")
        _run(["dpkg-deb", "-x", deb, work / "root"])
        deb.unlink()
        (work / "SOURCE").write_text(f"suite={suite} file={filename} sha256={sha256}\n")
    return dest


def _build_rootfs() -> Path:
    """debootstrap --variant=minbase with the guest packages; keyed by suite and packages."""
    dest = CACHE_ROOT / f"rootfs-{_digest(SUITE, *GUEST_PACKAGES)}"
    if (dest / ".done").exists():
        return dest
    mirror = _mirror()
    log(f"debootstrap {SUITE} from {mirror} (+{','.join(GUEST_PACKAGES)}); takes a few minutes")
    with _building(dest, marker=".done") as work:
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(GUEST_PACKAGES)}",
                SUITE,
                work,
                mirror,
            ],
            stdout=subprocess.DEVNULL,
        )
    return dest


def _modules_root(kernel_root: Path) -> Path:
    """lib/modules, or usr/lib/modules where newer packages (trixie) put them."""
    usr = kernel_root / "usr" / "lib" / "modules"
    lib = kernel_root / "lib" / "modules"
    return usr if usr.is_dir() and not lib.is_dir() else lib


def _module_closure(kernel_root: Path, version: str) -> set[Path]:
    """The .ko files of GUEST_MODULES and everything they depend on (a module this kernel
    does not have, such as 6.12's linear, is left out)."""
    lib = kernel_root / "lib" / "modules"
    if not lib.exists() and (kernel_root / "usr" / "lib" / "modules").is_dir():
        if lib.is_symlink():
            lib.unlink()  # an absolute link from before the folder was renamed
        lib.parent.mkdir(exist_ok=True)
        lib.symlink_to(Path("..") / "usr" / "lib" / "modules")  # modprobe -d wants lib/modules
    if not (kernel_root / "lib" / "modules" / version / "modules.dep").exists():
        _run(["depmod", "-b", kernel_root, version])  # the .deb leaves this to its postinst
    files: set[Path] = set()
    for module in GUEST_MODULES:
        shown = subprocess.run(
            ["modprobe", "-d", kernel_root, "-S", version, "--show-depends", module],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        files |= {
            Path(line.split()[1]) for line in shown.splitlines() if line.startswith("insmod ")
        }
    return files


def build_image(kernel: str | None = None) -> Image:
    """Build (or find in the cache) the kernel + initramfs of one kernel generation (default:
    selected_kernel()); needs root for debootstrap."""
    kernel = check_kernel(kernel or selected_kernel())
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with _locked(CACHE_ROOT / "build.lock"):
        cached = _find_cached_image(kernel)
        if cached is not None:
            return cached
        if not _is_root():
            raise HarnessUnavailable(
                f"no cached {kernel} VM image in {CACHE_ROOT} and building one needs root"
            )
        ensure_host_tools()
        suite = KERNELS[kernel]
        if suite == SUITE:
            kernel_dir = _build_kernel(_kernel_package())
        else:
            kernel_dir = _build_suite_kernel(suite)
        rootfs = _build_rootfs()
        return _pack_initramfs(kernel_dir, rootfs)


def _image_key(kernel_dir: Path, rootfs: Path) -> str:
    return _digest(
        kernel_dir.name, rootfs.name, *GUEST_MODULES, GUEST_INIT.read_bytes(), MDADM_CONF, *TRIM
    )


def _find_cached_image(kernel: str) -> Image | None:
    """The newest complete image of this kernel generation whose key matches today's recipe,
    without touching apt or the mirror."""
    rootfs = CACHE_ROOT / f"rootfs-{_digest(SUITE, *GUEST_PACKAGES)}"
    for kernel_dir in sorted(CACHE_ROOT.glob("kernel-*linux-image-*"), reverse=True):
        if generation_of(kernel_dir.name) != kernel:
            continue
        image = _image_in(CACHE_ROOT / f"image-{_image_key(kernel_dir, rootfs)}")
        if image is not None:
            return image
    return None


def _image_in(directory: Path) -> Image | None:
    if not (directory / "done").exists():
        return None
    return Image(
        kernel=directory / "vmlinuz",
        initramfs=directory / "initramfs.cpio",
        kernel_version=(directory / "KERNEL_VERSION").read_text().strip(),
        mdadm_version=(directory / "MDADM_VERSION").read_text().strip(),
    )


def _pack_initramfs(kernel_dir: Path, rootfs: Path) -> Image:
    dest = CACHE_ROOT / f"image-{_image_key(kernel_dir, rootfs)}"
    image = _image_in(dest)
    if image is not None:
        return image
    log(f"packing initramfs into {dest}")
    kernel_root = kernel_dir / "root"
    (version,) = [p.name for p in _modules_root(kernel_root).iterdir()]
    with _building(dest) as work:
        stage = work / "stage"
        _run(["cp", "-a", rootfs, stage])
        (stage / ".done").unlink()
        for sub in TRIM:
            shutil.rmtree(stage / sub, ignore_errors=True)
        modules_src = _modules_root(kernel_root) / version
        modules_dst = stage / "lib" / "modules" / version
        modules_dst.mkdir(parents=True)
        for meta in modules_src.glob("modules.builtin*"):
            shutil.copy(meta, modules_dst)
        shutil.copy(modules_src / "modules.order", modules_dst)
        for ko in _module_closure(kernel_root, version):
            target = (
                stage
                / "lib"
                / "modules"
                / version
                / ko.resolve().relative_to(modules_src.resolve())
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            if ko.suffix == ".xz":  # trixie compresses its modules; the guest gets them plain
                target.with_suffix("").write_bytes(lzma.decompress(ko.read_bytes()))
            else:
                shutil.copy(ko, target)
        _run(["depmod", "-b", stage, version])
        (stage / "etc" / "mdadm" / "mdadm.conf").write_text(MDADM_CONF)
        (stage / "etc" / "hostname").write_text("mdboost-vm\n")
        shutil.copy(GUEST_INIT, stage / "init")
        (stage / "init").chmod(0o755)
        mdadm_version = subprocess.run(
            ["dpkg-query", f"--admindir={stage}/var/lib/dpkg", "-W", "-f=${Version}", "mdadm"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = subprocess.run(
            ["find", ".", "-print0"], cwd=stage, capture_output=True, check=True
        ).stdout
        with (work / "initramfs.cpio").open("wb") as cpio:
            subprocess.run(
                ["cpio", "--null", "-o", "-H", "newc", "--quiet"],
                cwd=stage,
                input=files,
                stdout=cpio,
                check=True,
            )
        shutil.rmtree(stage)
        shutil.copy(kernel_root / "boot" / f"vmlinuz-{version}", work / "vmlinuz")
        (work / "KERNEL_VERSION").write_text(version + "\n")
        (work / "MDADM_VERSION").write_text(mdadm_version + "\n")
    image = _image_in(dest)
    assert image is not None
    return image


def _accelerator() -> list[str]:
    # A PVM-only /dev/kvm (this workplace) hangs stock kernels: emulate (TCG) there.
    if not Path("/sys/module/kvm_pvm").exists() and os.access("/dev/kvm", os.R_OK | os.W_OK):
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg,thread=multi,tb-size=512", "-cpu", "max"]


def _start_disk_server(
    directory: Path, images: Sequence[Path], media_mb_s: tuple[float, float] | None = None
) -> subprocess.Popen[bytes]:
    """hddsim.py serving the images as d0, d1, ... on directory/hdd.sock, once it listens;
    `media_mb_s` (outer, inner): a NAS disk's zoned media rate instead of hddsim's flat 60 MB/s."""
    socket_path = directory / "hdd.sock"
    specs = [f"d{i}={img}" for i, img in enumerate(images)]
    media = ["--media", f"{media_mb_s[0]:g}-{media_mb_s[1]:g}"] if media_mb_s else []
    script = str(Path(__file__).with_name("hddsim.py"))
    with (directory.parent / "hddsim.log").open("wb") as log_file:  # the server keeps its own
        server = subprocess.Popen(
            [sys.executable, script, *media, str(socket_path), *specs],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while not socket_path.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise HarnessUnavailable(f"hddsim.py did not start: {socket_path}")
        time.sleep(0.05)
    return server


def boot(
    image: Image,
    guest_cmd: str,
    *,
    disks: int = 6,
    disk_size_mib: int = 512,
    drive_opts: str = "",
    drive_opts_by_disk: Sequence[str] = (),
    spinning: bool = False,
    media_mb_s: tuple[float, float] | None = None,
    cpu_cores: float | None = None,
    memory_mib: int = 3072,
    smp: int = 2,
    timeout_s: float = 900,
    run_dir: Path | None = None,
) -> GuestRun:
    """Boot the VM once, run the bash text guest_cmd as root inside it, power off.

    In the guest: cwd and $OUT are the run directory's out/ (the result), $REPO the repository.
    drive_opts is appended to every qemu -drive, e.g. HDD-like disks:
    "throttling.bps-total=60000000,throttling.iops-total=120"; drive_opts_by_disk[i], where
    given and not empty, to disk i's alone (one slow member among fast ones). spinning=True serves
    the disks through hddsim.py instead, whose answers take as long as a hard disk's head travel
    (drive options do not apply there; `media_mb_s`, outer and inner: a NAS disk's zoned media
    rate). `cpu_cores` holds QEMU to that share of one host core (a cgroup quota), as a weak NAS
    CPU would hold md's thread.
    """
    if shutil.which("qemu-system-x86_64") is None:
        raise HarnessUnavailable("qemu-system-x86_64 is not installed")
    run_dir = run_dir or Path(tempfile.mkdtemp(prefix="mdboost-vm-run-"))
    (run_dir / "out").mkdir(parents=True, exist_ok=True)
    (run_dir / "disks").mkdir(exist_ok=True)
    (run_dir / "guest-cmd").write_text(guest_cmd)
    drives: list[str] = []
    images: list[Path] = []
    for i in range(disks):
        img = run_dir / "disks" / f"d{i}.img"
        with img.open("wb") as f:
            f.truncate(disk_size_mib << 20)
        images.append(img)
        own = drive_opts_by_disk[i] if i < len(drive_opts_by_disk) else ""
        extra = "".join(f",{opts}" for opts in (drive_opts, own) if opts)
        attach = f"file={img},if=none,id=d{i},format=raw,cache=unsafe,aio=threads{extra}"
        device = f"virtio-blk-pci,drive=d{i},serial=vm-disk-{i}"
        if spinning:
            nbd = f"server.type=unix,server.path={run_dir / 'disks' / 'hdd.sock'},export=d{i}"
            attach = f"driver=nbd,{nbd},if=none,id=d{i}"
            # One queue, as a SATA disk has: the guest then schedules it with mq-deadline, as a
            # NAS kernel does its disks (with a queue per vCPU it would pick "none").
            device += ",num-queues=1"
        drives += ["-drive", attach, "-device", device]
    disk_server = _start_disk_server(run_dir / "disks", images, media_mb_s) if spinning else None
    shares = [
        "-fsdev",
        f"local,id=io,path={run_dir},security_model=none",
        "-device",
        "virtio-9p-pci,fsdev=io,mount_tag=io",
        "-fsdev",
        f"local,id=repo,path={REPO},security_model=none,readonly=on",
        "-device",
        "virtio-9p-pci,fsdev=repo,mount_tag=repo",
    ]
    # no_timer_check: under emulation on a loaded host, 5.10's check of the IO-APIC timer
    # ("..MP-BIOS bug: 8254 timer not connected") hung a boot for good; a VM needs no such check.
    append = (
        "console=ttyS0 panic=-1 quiet loglevel=4 raid=noautodetect no_timer_check "
        f"mdboost.repo={REPO}"
    )
    cmd = [
        "qemu-system-x86_64",
        "-machine",
        "q35",
        *_accelerator(),
        "-smp",
        str(smp),
        "-m",
        str(memory_mib),
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        "stdio",
        "-kernel",
        str(image.kernel),
        "-initrd",
        str(image.initramfs),
        "-append",
        append,
        *drives,
        *shares,
        "-nic",
        "none",
    ]
    started = time.monotonic()
    for attempt in (1, 2):
        with (run_dir / "console.log").open("w") as console:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT
            )
            if cpu_cores is not None:
                hold_to_cores(proc.pid, cpu_cores)
            booted = _boot_outcome(proc, run_dir / "console.log")
            if attempt == 2 or booted == "ready":
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                break
            log(f"the guest {booted} before /init said it was ready: booting again")
            proc.kill()
            proc.wait()
    wall = time.monotonic() - started
    if disk_server is not None:
        disk_server.terminate()
        disk_server.wait()
    shutil.rmtree(run_dir / "disks", ignore_errors=True)
    console_text = (run_dir / "console.log").read_text(errors="replace")
    rc_file = run_dir / "out" / "guest-rc"
    rc = int(rc_file.read_text()) if rc_file.exists() else None
    ready = None
    for line in console_text.splitlines():
        if line.startswith("VM: ready uptime="):
            ready = float(line.split("=")[1].split()[0])
    return GuestRun(run_dir=run_dir, rc=rc, wall_s=wall, ready_s=ready, console=console_text)


CPU_CGROUP = Path("/sys/fs/cgroup/cpu/mdboost-vm")  # cgroup v1's cpu controller
CPU_CGROUP_V2 = Path("/sys/fs/cgroup/mdboost-vm")
QUOTA_PERIOD_US = 100_000


def hold_to_cores(pid: int, cores: float) -> None:
    """Put process `pid` (QEMU, all its threads) in a cgroup whose CPU quota is `cores` of one
    host core per 100 ms (cgroup v1's cpu.cfs_quota_us, else v2's cpu.max)."""
    quota = int(cores * QUOTA_PERIOD_US)
    if CPU_CGROUP.parent.is_dir():
        CPU_CGROUP.mkdir(exist_ok=True)
        (CPU_CGROUP / "cpu.cfs_period_us").write_text(f"{QUOTA_PERIOD_US}\n")
        (CPU_CGROUP / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        (CPU_CGROUP / "cgroup.procs").write_text(f"{pid}\n")
        return
    CPU_CGROUP_V2.mkdir(exist_ok=True)
    (CPU_CGROUP_V2 / "cpu.max").write_text(f"{quota} {QUOTA_PERIOD_US}\n")
    (CPU_CGROUP_V2 / "cgroup.procs").write_text(f"{pid}\n")


def _boot_outcome(proc: subprocess.Popen[bytes], console: Path) -> str:
    """How the boot went: "ready" once /init says "VM: ready" within READY_TIMEOUT_S, else how it
    failed. Both failures are the emulator's, never md's, and a second boot gets past them: a
    boot hung for good on a loaded host, and (seen in CI on 6.12 under TCG) a panic in the
    scheduler's start-up, before any of the scenario ran."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if "VM: ready" in console.read_text(errors="replace"):
            return "ready"
        if proc.poll() is not None:
            said = console.read_text(errors="replace")  # all of it now: it may have just said it
            if "VM: ready" in said:
                return "ready"
            return "panicked" if "Kernel panic" in said else "stopped"
        time.sleep(0.5)
    return f"hung for {READY_TIMEOUT_S} s"


def check_repo_venv() -> Path:
    """The repository's .venv python, which the guest runs; it must be Debian's /usr/bin/python3."""
    python = REPO / ".venv" / "bin" / "python"
    config = REPO / ".venv" / "pyvenv.cfg"
    if not python.exists() or not config.exists():
        raise HarnessUnavailable(f"{python} missing: run `sh scripts/setup.sh test` first")
    home = next(
        (
            line.split("=", 1)[1].strip()
            for line in config.read_text().splitlines()
            if line.startswith("home")
        ),
        "",
    )
    if home != "/usr/bin":
        raise HarnessUnavailable(
            f".venv was built from {home}/python3, not Debian's /usr/bin/python3, so it cannot run "
            "in the guest: remove .venv and run `sh scripts/setup.sh test`"
        )
    return python


# QEMU's throttle for HDD-like disks: 60 MB/s and 120 requests/s each.
HDD_LIKE = "throttling.bps-total=60000000,throttling.iops-total=120"


def scenario_facts(
    image: Image, script: str, run_dir: Path, *args: str, **boot_options: Any
) -> dict[str, Any]:
    """Boot once to run tests/realkernel/guest/<script> with `args`; its $OUT/facts.json.
    Raises RuntimeError with the guest's story when the scenario failed."""
    run = boot(image, guest_python(script, *args), run_dir=run_dir, **boot_options)
    if run.rc != 0:
        raise RuntimeError(f"{script} failed in the guest:\n{run.describe()}")
    facts: dict[str, Any] = json.loads((run.out / "facts.json").read_text())
    return facts


def guest_python(script: str, *args: str) -> str:
    """A guest-cmd that runs tests/realkernel/guest/<script> with the repository's .venv."""
    quoted = " ".join(f"'{a}'" for a in args)
    return f'exec "$REPO/.venv/bin/python" "$REPO/tests/realkernel/guest/{script}" {quoted}\n'


def capture_fixtures(kernel: str) -> GuestRun:
    """Boot once, capture every md state, and replace the kernel's fixtures with the result."""
    image = build_image(kernel)
    run = boot(image, guest_python("capture_formats.py"), disk_size_mib=CAPTURE_DISK_MIB)
    if run.rc != 0:
        raise RuntimeError(run.describe())
    fixtures = fixtures_dir(kernel)
    fixtures.mkdir(parents=True, exist_ok=True)
    remove_captured(fixtures)
    shutil.copytree(run.out / "fixtures", fixtures, dirs_exist_ok=True)
    shutil.copy(run.out / "facts.json", fixtures / "kernel-facts.json")
    (fixtures / "README.md").write_text(FIXTURES_README.format(image=image))
    return run


def remove_captured(fixtures: Path) -> None:
    """Delete the captured state folders; keep those rendered from md.c's format (RENDERED.md),
    which this kernel cannot show (tests/fixtures/kernel/raid5-broken)."""
    for old in fixtures.glob("*/proc/mdstat"):
        if not (old.parents[1] / "RENDERED.md").is_file():
            shutil.rmtree(old.parents[1])


FIXTURES_README = """\
# Kernel-exact md states: Linux {image.generation}

Captured by booting Debian's own kernel **{image.kernel_version}** (userland Debian bookworm,
mdadm {image.mdadm_version}) in QEMU with virtual disks, and walking md through every state we
could provoke: tests/realkernel/guest/capture_formats.py. Each kernel generation has its own
folder (tests/fixtures/kernel for 6.1, kernel-5.10, kernel-6.12). Regenerate (as root, ~3-8
minutes):

    .venv/bin/python tests/realkernel/vmharness.py --kernel {image.generation} capture

Each folder is one moment, read at once: `proc/mdstat` (byte for byte as the kernel printed it),
`proc/sys/dev/raid/speed_limit_*`, `sys/block/<md>/md/*` (with each member's `dev-*/state`) and
`sys/block/*/queue/read_ahead_kb` (a root for MDBOOST_PROC_ROOT / MDBOOST_SYS_ROOT), and
`mdadm-detail/<md>.txt`, the reference tests/realkernel/test_kernel_fixtures.py holds
app.kernel.mdstat_parse.parse() to (level, raid devices, state, sync action, members, slots, F/S
flags, read-only).
Progress states were held at a crawl with speed_limit_min = speed_limit_max = 1000 KiB/s, so the
speed limits in those folders are not the defaults (1000 / 200000). The capture ends with two
failed arrays: `raid5-two-failed` (two of three members failed, then I/O) and
`raid0-member-unplugged` (a member disk removed by PCI hot-unplug in the guest, then I/O).

A folder holding `RENDERED.md` was not captured: it shows a state this kernel cannot print (md's
`broken`, Linux 6.12+), rendered from md.c's format; its RENDERED.md cites the source. Capturing
keeps it, and the comparison with mdadm skips it.

`kernel-facts.json`: the kernel's answers to writes mdboost validates or survives, recorded
during a RAID5 reshape (errno name, then the value read back), stripe_cache_size before and
after `mdadm --grow` started, the personalities, a raid5's md attributes, and what the two
failed arrays showed at once and after the next I/O.
"""


def main(argv: list[str]) -> int:
    kernel = selected_kernel()
    if argv[:1] == ["--kernel"] and len(argv) > 1 and argv[1] in KERNELS:
        kernel, argv = argv[1], argv[2:]
    if argv[:1] == ["build"]:
        image = build_image(kernel)
        print(image)
        return 0
    if argv[:1] == ["capture"]:
        run = capture_fixtures(kernel)
        print(f"captured in {run.wall_s:.0f} s (guest ready after {run.ready_s} s)")
        return 0
    if len(argv) == 2 and argv[0] == "run":
        run = boot(build_image(kernel), Path(argv[1]).read_text())
        print(run.describe() if run.rc != 0 else run.run_dir)
        return 0 if run.rc == 0 else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

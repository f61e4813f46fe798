"""The release archive as an owner gets it: built by scripts/release.py, unpacked the way the
README's DSM steps say (File Station: upload to the `docker` shared folder, Extract Here)."""

import subprocess
import sys
import zipfile
from pathlib import Path

from tests import PROJECT_ROOT


def unpacked_release(workdir: Path) -> Path:
    """Build the archives in `workdir`, extract the zip into `workdir/docker` and return the
    folder the README names (`/volume1/docker/mdboost` on the NAS)."""
    dist = workdir / "dist"
    subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "release.py"), "--out", str(dist)],
        check=True,
        capture_output=True,
    )
    (archive,) = dist.glob("mdboost-*.zip")
    shared_folder = workdir / "docker"
    with zipfile.ZipFile(archive) as unzip:
        unzip.extractall(shared_folder)
    return shared_folder / "mdboost"

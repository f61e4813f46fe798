"""The download works: the release archive unpacks into the folder the README's DSM steps
name, with compose.yaml and the Dockerfile side by side, and builds (tests/test_container.py
builds and runs the image from the same unpacked folder)."""

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import yaml

from tests import PROJECT_ROOT
from tests.release import unpacked_release

README = (PROJECT_ROOT / "README.md").read_text()


def test_the_archive_unpacks_into_the_readmes_folder_and_builds_a_wheel(tmp_path: Path):
    project = unpacked_release(tmp_path)
    assert "/volume1/docker/mdboost" in README
    assert sorted(p.name for p in (tmp_path / "docker").iterdir()) == ["mdboost"]  # one folder
    compose = yaml.safe_load((project / "compose.yaml").read_text())
    build = compose["services"]["mdboost"]["build"]
    assert (project / build / "Dockerfile").is_file()
    # Everything the Dockerfile copies in and builds from: the Dockerfile's own steps, here.
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), "."],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("mdboost-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for carried in ("templates/index.html", "static/app.css", "presets/boost.toml"):
        assert any(n.endswith(carried) for n in names), carried
    assert any(re.search(r"migrations/0001_.*\.sql$", n) for n in names)
    assert not (project / "tests").exists() and not (project / ".git").exists()


def test_the_tarball_holds_the_same_files_as_the_zip(tmp_path: Path):
    project = unpacked_release(tmp_path)
    zipped = sorted(str(p.relative_to(project.parent)) for p in project.rglob("*") if p.is_file())
    (tarball,) = (tmp_path / "dist").glob("mdboost-*.tar.gz")
    with tarfile.open(tarball) as archive:
        assert sorted(m.name for m in archive.getmembers() if m.isfile()) == zipped

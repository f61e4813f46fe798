"""Build the release archives an owner downloads: dist/mdboost-VERSION.zip and .tar.gz.

Each unpacks into one folder, `mdboost/`, holding exactly what Container Manager builds from
(Dockerfile, compose.yaml, the source and its data folders) and the docs: extracted in DSM's
`docker` shared folder it is the README's `/volume1/docker/mdboost`. Files are the ones git
tracks, read from the working tree.

    .venv/bin/python scripts/release.py [--out DIR]
"""

import argparse
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = "mdboost"  # the folder the README's DSM steps name
SHIPPED = (
    "README.md",
    "LICENSE",
    "Dockerfile",
    ".dockerignore",
    "compose.yaml",
    "pyproject.toml",
    "requirements.lock",
    "app/",
    "migrations/",
    "presets/",
    "templates/",
    "static/",
    "docs/",
    "contrib/",
)


def version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def shipped_files() -> list[str]:
    """The tracked files under SHIPPED, sorted; fails outside a git checkout."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--", *SHIPPED],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(path for path in listed.split("\0") if path and (ROOT / path).is_file())


def build(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = shipped_files()
    stem = f"mdboost-{version()}"
    archive_zip, archive_tar = out / f"{stem}.zip", out / f"{stem}.tar.gz"
    with zipfile.ZipFile(archive_zip, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(ROOT / path, f"{TOP}/{path}")
    with tarfile.open(archive_tar, "w:gz") as archive:
        for path in files:
            archive.add(ROOT / path, f"{TOP}/{path}", recursive=False)
    return [archive_zip, archive_tar]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    for archive in build(parser.parse_args().out):
        print(f"{archive} ({archive.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()

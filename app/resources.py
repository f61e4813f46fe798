"""Where mdboost's data directories are: inside the installed wheel, else the source checkout's.

The wheel maps migrations/, presets/, templates/ and static/ into the app package (pyproject.toml,
package-dir); an editable install or a run from the repository finds them at its top level.
"""

from importlib.resources import files
from pathlib import Path

# The checkout holding app/: in an editable install or a run from the repository.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


class MissingDataDir(RuntimeError):
    """A directory mdboost needs to start is not there (a broken install or a wrong setting)."""


def data_dir(name: str) -> Path:
    """The packaged directory `name` when the wheel carries it, else the checkout's."""
    packaged = files("app").joinpath(name)
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return SOURCE_ROOT / name


def require_dirs(**dirs: Path) -> None:
    """Stop start-up with the setting and path of the first directory that does not exist."""
    for setting, path in dirs.items():
        if not path.is_dir():
            raise MissingDataDir(
                f"the {setting} directory {path} does not exist: reinstall mdboost, or point "
                f"MDBOOST_{setting.upper()} at it"
            )

"""The docs cannot rot silently: every relative link in README.md and docs/ leads somewhere,
every MDBOOST_* variable they name is a real setting, and every setting is in the table of
docs/configuration.md."""

import re
from pathlib import Path

import pytest

from app.config import env_names
from tests import PROJECT_ROOT, apt

DOCS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
# Settings no owner sets: a hook of the crash-safety tests.
UNDOCUMENTED = {"test_crash_at"}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"")


def relative(path: Path) -> str:
    return path.relative_to(PROJECT_ROOT).as_posix()


def anchors(markdown: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", markdown.read_text(), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def links(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_relative_link_leads_somewhere(doc: Path) -> None:
    for link in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):
            continue  # https://, mailto: ...
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        assert path.exists(), f"{relative(doc)} links to {link}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{relative(doc)} links to {link}: no such heading"


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_variable_the_docs_name_is_a_setting(doc: Path) -> None:
    known = {*env_names().values(), apt.NO_INSTALL}  # the app's settings, the suite's switch
    for name in set(re.findall(r"\bMDBOOST_[A-Z0-9_]*[A-Z0-9]\b", doc.read_text())):
        assert name in known, f"{relative(doc)} names {name}, which app/config.py does not read"


def test_every_setting_is_in_the_configuration_table() -> None:
    table = (PROJECT_ROOT / "docs" / "configuration.md").read_text()
    rows = "\n".join(line for line in table.splitlines() if line.startswith("|"))
    for field, env in env_names().items():
        if field in UNDOCUMENTED:
            continue
        assert f"`{env}`" in rows, f"setting {field} ({env}) is not in docs/configuration.md"


def test_the_readme_stays_short_and_opens_with_the_two_commands() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first_block] == [
        ["sh", "scripts/run.sh"],
        ["sh", "scripts/test.sh"],
    ]
    assert readme.index("## Install on Synology DSM 7") < len(readme[:6000])

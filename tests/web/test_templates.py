"""The web tests' templates fail where they read an attribute their object lacks
(tests/web/conftest.py): a field a view no longer has would otherwise render as empty, silently."""

from types import SimpleNamespace

import jinja2
import pytest

from app.config import Settings
from app.web import templating


def test_a_template_that_reads_a_missing_attribute_fails_the_test() -> None:
    """A flag a partial is not given is still just false."""
    env = templating._templates(Settings().templates_dir).env
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ card.title }}").render(card=SimpleNamespace(name="md2"))
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{% if card.title %}x{% endif %}").render(card=SimpleNamespace())
    page = env.from_string("{% if oob %}x{% endif %}{{ card.name }}")
    assert page.render(card=SimpleNamespace(name="md2")) == "md2"

import shutil
import subprocess
from dataclasses import dataclass

import pytest

from tests import apt

PACKAGE = "prometheus"  # Debian's package: the server and promtool


@dataclass(frozen=True)
class PrometheusTools:
    prometheus: str
    promtool: str

    def check(self, *args: str, stdin: bytes | None = None) -> str:
        """`promtool ARGS`; fails the test with promtool's own words when it complains."""
        result = subprocess.run(
            [self.promtool, *args], input=stdin, capture_output=True, timeout=60
        )
        output = (result.stdout + result.stderr).decode()
        assert result.returncode == 0, output
        return output


@pytest.fixture(scope="session")
def prometheus_tools() -> PrometheusTools:
    """Debian's prometheus and promtool: installed with apt-get in CI or as root, else skip."""
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        if not apt.may_install():
            pytest.skip(apt.not_installed(PACKAGE))
        apt.install(PACKAGE)
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    assert prometheus and promtool
    return PrometheusTools(prometheus, promtool)

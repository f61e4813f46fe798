"""Numbers JSON does not have (NaN, Infinity) or cannot be held (1e400, 2**64), sent to the
real server: a 422 naming the field, never a 500, and no traceback in the log however often."""

import httpx
import pytest

from tests.server import tree_server

TOKEN = "env-token-0123456789-0123456789-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/plan", b'{"change": "add", "disk_bytes": NaN}', "disk_bytes"),
        ("/api/plan", b'{"change": "add", "disk_bytes": Infinity}', "disk_bytes"),
        ("/api/plan", b'{"change": "add", "disk_bytes": -Infinity}', "disk_bytes"),
        ("/api/plan", b'{"change": "add", "disk_bytes": 1e400}', "disk_bytes"),
        ("/api/plan", b'{"change": "add", "disk_bytes": 18446744073709551616}', "disk_bytes"),
        ("/api/plan", b'{"change": "add", "disk_bytes": 1, "x": [0, {"y": NaN}]}', "x"),
    ],
)
def test_a_number_json_has_not_is_a_422_naming_the_field(box, tmp_path, path, body, field):
    log = tmp_path / "server.log"
    with tree_server(box, tmp_path, MDBOOST_API_TOKEN=TOKEN) as server:
        with httpx.Client(base_url=server.base, headers=AUTH) as client:
            for _ in range(50):
                answer = client.post(path, content=body)
                assert answer.status_code == 422, answer.text
                (problem,) = answer.json()["detail"]
                assert problem["loc"][:2] == ["body", field], problem
                assert field in problem["msg"]
        size = log.stat().st_size
    text = log.read_text()
    assert "Traceback" not in text and '" 500' not in text, text[-3000:]
    assert size < 50 * 1024  # the start-up lines and 50 access lines, not 50 tracebacks

"""Each sender against a real local receiver, in the request shape the receiver documents."""

import base64
import socket
from functools import partial

import pytest

from app.notify import destinations, senders
from app.notify.senders import Message, SendFailed
from tests.notify.receivers import HttpReceiver, SmtpReceiver

# The receivers listen on 127.0.0.1: a receiver on the NAS itself, allowed here.
send = partial(senders.send, allow_local=True)

MESSAGE = Message(
    key="run:12:milestone:50",
    kind="milestone",
    title="md2: reshape 50 % done",
    body="Reshaping md2: 50 % done.\nETA Tue 14 Oct 16:20",
    priority="low",
    tags=["hourglass"],
    click="http://nas:8080/#array-md2",
    array="md2",
)


@pytest.fixture
def receiver():
    http = HttpReceiver().start()
    yield http
    http.stop()


def test_ntfy_posts_the_text_to_the_topic_with_title_priority_tags_click_and_token(receiver):
    send(f"ntfy+http://{receiver.base}/mdboost_alerts?token=tk_secret123", MESSAGE)
    (request,) = receiver.taken()
    assert request.path == "/mdboost_alerts"
    assert request.body.decode() == MESSAGE.body
    h = request.headers
    assert h["title"] == MESSAGE.title and h["priority"] == "low" and h["tags"] == "hourglass"
    assert h["click"] == MESSAGE.click and h["authorization"] == "Bearer tk_secret123"
    assert h["x-sequence-id"] == MESSAGE.message_id  # the same id on a re-send: ntfy updates


def test_ntfy_user_and_password_and_a_non_ascii_title(receiver):
    message = Message("k", "test", "md2: reshape 50 % done – ETA 16:20", "body")
    send(f"ntfy+http://phil:pass%21word@{receiver.base}/topic", message)
    (request,) = receiver.taken()
    assert (
        request.headers["authorization"] == "Basic " + base64.b64encode(b"phil:pass!word").decode()
    )
    encoded = request.headers["title"]  # RFC 2047, as ntfy's docs allow for UTF-8 titles
    assert encoded.startswith("=?UTF-8?B?")
    assert base64.b64decode(encoded[10:-2]).decode() == message.title


def test_gotify_posts_json_to_message_with_the_app_token_in_a_header(receiver):
    send(f"gotify+http://{receiver.base}/sub/path/AppToken.123", MESSAGE)
    (request,) = receiver.taken()
    assert request.path == "/sub/path/message"
    assert request.headers["x-gotify-key"] == "AppToken.123"
    assert request.json() == {
        "title": MESSAGE.title,
        "message": MESSAGE.body,
        "priority": 3,
        "extras": {"client::notification": {"click": {"url": MESSAGE.click}}},
    }


def test_a_webhook_gets_the_message_as_json_with_an_idempotency_key(receiver):
    send(f"http://{receiver.base}/hooks/abc?x=1", MESSAGE)
    (request,) = receiver.taken()
    assert request.path == "/hooks/abc?x=1"
    assert request.headers["idempotency-key"] == MESSAGE.message_id
    assert request.json() == MESSAGE.to_json()


def test_email_through_a_real_smtp_server():
    with SmtpReceiver() as smtp:
        send(
            f"smtp://127.0.0.1:{smtp.port}/?to=owner@example.com,b@example.com&from=nas@example.com",
            MESSAGE,
        )
        (mail,) = smtp.inbox.messages
    assert mail["Subject"] == MESSAGE.title
    assert mail["To"] == "owner@example.com, b@example.com" and mail["From"] == "nas@example.com"
    assert mail["Message-ID"] == f"<{MESSAGE.message_id}@mdboost>"
    text = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert MESSAGE.body in text and MESSAGE.click in text


def test_a_password_is_never_sent_in_clear_when_the_server_has_no_starttls():
    with SmtpReceiver() as smtp:
        url = f"smtp://me:hunter22@127.0.0.1:{smtp.port}/?to=owner@example.com"
        with pytest.raises(SendFailed, match="STARTTLS") as failure:
            send(url, MESSAGE)
        assert smtp.inbox.messages == []
    assert "hunter22" not in str(failure.value)


def test_failures_are_masked_and_bounded_by_the_timeout(receiver):
    receiver.status = 503
    url = f"ntfy+http://{receiver.base}/secret_topic_x?token=tk_abcdef"
    with pytest.raises(SendFailed, match="HTTP 503") as failure:
        send(url, MESSAGE)
    receiver.stop()
    with pytest.raises(SendFailed, match="cannot reach") as refused:
        send(url, MESSAGE)
    with socket.socket() as silent:  # accepts connections but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        host, port = silent.getsockname()
        with pytest.raises(SendFailed) as timeout:
            send(f"gotify+http://{host}:{port}/AppTokenZZ", MESSAGE, timeout=0.5)
    for error in (failure, refused, timeout):
        for secret in ("secret_topic_x", "tk_abcdef", "AppTokenZZ"):
            assert secret not in str(error.value)


def test_urls_are_checked_and_masked():
    assert destinations.label("ntfy://ntfy.sh/mdboost_h7x2k9") == "ntfy://ntfy.sh/…x2k9"
    assert (
        destinations.label("smtp://me:pw@mail.example:587/?to=a@b.example")
        == "smtp://mail.example:587/…mple"
    )
    assert destinations.label("gotify://push.example/AbCdEfGh") == "gotify://push.example/…EfGh"
    assert destinations.split_urls(" ntfy://a/t1,\nhttps://h/x  gotify://g/T ") == [
        "ntfy://a/t1",
        "https://h/x",
        "gotify://g/T",
    ]
    for bad, why in (
        ("ftp://host/x", "unknown scheme"),
        ("ntfy://host/", "one topic"),
        ("ntfy://host/a/b", "one topic"),
        ("gotify://host", "token"),
        ("smtp://host:25/", "to="),
        ("smtp://host/?to=not-an-address", "to="),
        ("https://", "needs a host"),
        ("http://host:99999999/", "not a URL"),
    ):
        with pytest.raises(destinations.BadDestination, match=why):
            destinations.parse(bad)
    redacted = destinations.redact(
        "failed for gotify://h/TokenXYZ: TokenXYZ refused", "gotify://h/TokenXYZ"
    )
    assert "TokenXYZ" not in redacted


def test_a_secret_is_masked_in_every_form_an_error_can_show_it():
    url = "ntfy+http://us%65r_q9:pa%73s_q9@host/topic_q9?token=tk_q9%2Bx%0d%0ay"
    shown = [
        "tk_q9+x\r\ny",  # percent-decoded
        "tk_q9%2Bx%0d%0ay",  # as written
        repr(b"Bearer tk_q9+x\r\ny"),  # http.client's "Invalid header value b'...'"
        repr("tk_q9+x\r\ny"),  # a str in an exception's repr
        "tk_q9 x\r\ny",  # decoded as a form value (+ is a space)
        "user_q9",  # the user name decoded
        "pass_q9",  # the password decoded
        base64.b64encode(b"user_q9:pass_q9").decode(),  # as a Basic credential
    ]
    for text in shown:
        masked = destinations.redact(f"ValueError: Invalid header value {text}", url)
        assert "q9" not in masked, (text, masked)


def test_a_url_whose_secrets_hold_control_characters_is_refused():
    for url in (
        "ntfy://host/topic?token=tk%0d%0aX-Evil:%20yes",
        "ntfy://:tk%0a@host/topic",
        "smtp://me:pw%00@mail.example/?to=a@b.example",
        "https://host/hook%7f",
    ):
        with pytest.raises(destinations.BadDestination, match="control characters") as refused:
            destinations.parse(url)
        assert "tk" not in str(refused.value)


def test_ntfys_own_https_address_is_an_ntfy_topic_not_a_json_webhook():
    """The address ntfy's app shows (https://ntfy.sh/topic) is pasted as it is; a
    JSON webhook body there would reach the phone as raw JSON."""
    assert destinations.parse("https://ntfy.sh/phone_alerts_k7").kind == "ntfy"
    assert destinations.parse("https://ntfy.example.org/phone_alerts_k7").kind == "ntfy"
    assert destinations.parse("https://hooks.example.org/phone_alerts_k7").kind == "webhook"
    assert destinations.parse("https://ntfy.sh/a/b").kind == "webhook"


def test_a_send_says_what_the_receiver_answered(receiver):
    answer = send(f"ntfy+http://{receiver.base}/mdboost_alerts", MESSAGE)
    assert answer == "ntfy answered HTTP 200 OK"

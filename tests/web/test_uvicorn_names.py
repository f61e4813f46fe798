"""The uvicorn names app/web/connections.py builds on, which uvicorn does not document: its h11
protocol class and that class's attributes, and the Server's main loop. No server option does
the guard's job (a head deadline, a cap per client address, room made at the cap), so the guard
subclasses them; an upgrade of uvicorn that renames one fails here, by name, rather than as a
guard that quietly stops guarding."""

import asyncio
import socket

import h11
import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState


async def app(scope: dict[str, object], receive: object, send: object) -> None:
    """An ASGI app the protocol needs to be built; no request reaches it here."""


def config() -> uvicorn.Config:
    loaded = uvicorn.Config(app, http=H11Protocol, log_config=None, lifespan="off")
    loaded.load()
    return loaded


def test_the_h11_protocol_is_where_config_http_h11_finds_it() -> None:
    assert uvicorn.Config(app, http="h11").http == "h11"
    loaded = uvicorn.Config(app, http="h11", log_config=None)
    loaded.load()
    assert loaded.http_protocol_class is H11Protocol


def test_the_protocol_attributes_the_guard_reads() -> None:
    """client and transport once connected, h11's connection state, the loop, the shared state
    and config: what a connection's admission, head deadline and Date header read."""
    state = ServerState()

    async def connect() -> None:
        served, peer = socket.socketpair()
        with served, peer:
            protocol = H11Protocol(config(), state, app_state={})
            loop = asyncio.get_running_loop()
            transport, _ = await loop.connect_accepted_socket(lambda: protocol, served)
            assert protocol.transport is transport
            assert protocol.loop is loop
            assert protocol.server_state is state
            assert protocol.config.date_header is True
            assert isinstance(protocol.config.encoded_headers, list)
            assert protocol.client is None or isinstance(protocol.client[0], str)
            assert isinstance(protocol.conn, h11.Connection)
            assert protocol.conn.their_state is h11.IDLE  # no head yet
            protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n")
            assert protocol.conn.their_state is h11.IDLE  # half a head: still awaited
            protocol.data_received(b"\r\n")
            assert protocol.conn.their_state is not h11.IDLE  # the head is in
            transport.abort()
            await asyncio.sleep(0)  # connection_lost runs

    asyncio.run(connect())


def test_the_server_loop_the_quiet_server_replaces() -> None:
    """main_loop calls on_tick(counter), whose tick 0 sets the Date and the server's headers
    and says whether to stop; handle_exit asks it to stop."""
    server = uvicorn.Server(config())
    assert asyncio.iscoroutinefunction(server.main_loop)
    assert asyncio.run(server.on_tick(0)) is False
    names = [name for name, _ in server.server_state.default_headers]
    assert names[0] == b"date"
    assert server.server_state.default_headers[1:] == server.config.encoded_headers
    server.handle_exit(15, None)
    assert server.should_exit
    assert asyncio.run(server.on_tick(0)) is True
    assert server.started is False


@pytest.mark.parametrize("name", ["connection_made", "connection_lost", "data_received"])
def test_the_protocol_methods_the_guard_extends(name: str) -> None:
    assert name in vars(H11Protocol)

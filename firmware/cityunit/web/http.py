"""The requests a phone may make, read strictly: HTTP/1.1 as far as one small page needs,
every size and every wait bounded, every mistake a 4xx and a closed connection.

One request per connection (`Connection: close`): a page of four files and a press now
and then needs no keep-alive, and a connection that ends with its answer cannot be held
open by a client that never sends its next request.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
from http import HTTPStatus
from typing import Final

from cityunit.core.values import Value

HEAD_BYTES = 8192  # the request line and its headers, at most
HEADERS = 48  # header lines, at most
BODY_BYTES = 1024  # a press's body is a few dozen bytes
HEAD_S = 10.0  # the whole request: a client sending a byte a second is cut off
_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) (\S{1,2048}) HTTP/1\.[01]")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name (RFC 9110)


class Refused(Exception):
    """A request that gets `status` (with `headers`) and a closed connection."""

    def __init__(
        self, status: HTTPStatus, why: str = "", headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(why or status.phrase)
        self.status = status
        self.headers = headers


def not_allowed(*methods: str) -> Refused:
    return Refused(HTTPStatus.METHOD_NOT_ALLOWED, headers=(("Allow", ", ".join(methods)),))


class Request(Value):
    """One request, as read within the limits above."""

    __slots__ = ("body", "headers", "method", "path", "query")
    method: Final[str]
    path: Final[str]
    query: Final[str]  # (the event stream's `k`: the token, for the simulator's frames)
    headers: Final[dict[str, str]]  # names in lower case; a repeated header: the last
    body: Final[bytes]

    def __init__(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> None:
        self.method, self.path, self.query, self.headers, self.body = (
            method, path, query, headers, body
        )  # fmt: skip


async def read(reader: asyncio.StreamReader) -> Request:
    """One request, within HEAD_S and the sizes above, or Refused (EOF: ConnectionError)."""
    try:
        async with asyncio.timeout(HEAD_S):
            return await _read(reader)
    except TimeoutError:
        raise Refused(HTTPStatus.REQUEST_TIMEOUT) from None


async def _read(reader: asyncio.StreamReader) -> Request:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise Refused(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE) from None
    except asyncio.IncompleteReadError as e:
        raise ConnectionError("closed before a whole request") from e
    lines = head[:-4].split(b"\r\n")
    try:
        request_line = lines[0].decode("ascii")
    except UnicodeDecodeError:
        raise Refused(HTTPStatus.BAD_REQUEST, "the request line is not ASCII") from None
    match = _REQUEST_LINE.fullmatch(request_line)
    if match is None:
        raise Refused(HTTPStatus.BAD_REQUEST, "not an HTTP/1 request line")
    method, target = match[1], match[2]
    if len(lines) - 1 > HEADERS:
        raise Refused(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE)
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        text = name.decode("latin-1")
        if not colon or not _TOKEN.fullmatch(text):
            raise Refused(HTTPStatus.BAD_REQUEST, "a malformed header")
        headers[text.lower()] = value.strip(b" \t").decode("latin-1")
    if "transfer-encoding" in headers:
        raise Refused(HTTPStatus.NOT_IMPLEMENTED, "no chunked bodies")
    length = headers.get("content-length", "0")
    if not length.isascii() or not length.isdigit():
        raise Refused(HTTPStatus.BAD_REQUEST, "a bad Content-Length")
    length = length.lstrip("0") or "0"  # (int() refuses over 4,300 digits, zeros too)
    if len(length) > len(str(BODY_BYTES)) or int(length) > BODY_BYTES:
        raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    try:
        body = await reader.readexactly(int(length))
    except asyncio.IncompleteReadError as e:
        raise ConnectionError("closed before the whole body") from e
    if not target.startswith("/"):
        raise Refused(HTTPStatus.BAD_REQUEST, "only a path is served")
    if not known_host(headers.get("host", "")):
        raise Refused(HTTPStatus.MISDIRECTED_REQUEST, "the page answers to its address only")
    path, _, query = target.partition("?")
    return Request(method, path, query, headers, body)


def known_host(host: str) -> bool:
    """Whether a request's Host is one the page is reached by: an IP address, localhost,
    this machine's name. A name that only points here (DNS rebinding: a web page a player
    opens, its name moved to the unit's address) is refused, so no page elsewhere reads
    the unit or the simulator's screen."""
    host = host.strip().lower()
    if host.startswith("["):  # [an IPv6 address], and maybe its port
        name = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:  # a name or an IPv4 address, and its port
        name = host.split(":", 1)[0]
    else:
        name = host
    if name in ("localhost", *_own_names()):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@functools.cache
def _own_names() -> tuple[str, ...]:
    name = socket.gethostname().lower()
    return (name, f"{name}.local")


def response(
    status: HTTPStatus,
    body: bytes = b"",
    content_type: str = "text/plain; charset=utf-8",
    headers: tuple[tuple[str, str], ...] = (),
    head: bool = False,
) -> bytes:
    """A whole response, closing the connection. Every answer forbids framing, sniffing
    and scripts from elsewhere: the page is the unit's own."""
    lines = [
        f"HTTP/1.1 {status.value} {status.phrase}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *SECURITY_HEADERS,
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body)


SECURITY_HEADERS = (
    "X-Content-Type-Options: nosniff",
    "Referrer-Policy: no-referrer",
    "Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "Cache-Control: no-store",
)


def listening(port: int, host: str = "") -> socket.socket:
    """A TCP socket listening on `port` (OSError: taken, or not ours to take), on `host`,
    or on every address, IPv4 and IPv6, where it is ""."""
    if not host and socket.has_dualstack_ipv6():
        sock = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
    else:
        sock = socket.create_server((host, port))
    sock.setblocking(False)
    return sock

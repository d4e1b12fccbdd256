"""What the Python SDK drivers (py_legacy_drive.py, py_default_drive.py) share: settings from
the environment, the server a Client is given (the URL, or with MCP_DRIVER_BEARER_TOKEN set a
transport whose every HTTP request carries `Authorization: Bearer <token>`), the outcome
lines, the SDK log kept for failures, and the runner that gives a drive its argument, its
time limits, its report and its exit code.

A driver keeps its own checks; its main() is `run(drive, ...)`. The drivers run as
`python <driver>.py <mcp-url>`, so this module is found next to them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from mcp import MCPError, types
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
# The SDK's own factory of its default HTTP client (private module, as mcp is pinned; the
# SDK's ClientSessionGroup builds its clients with it too).
from mcp.shared._httpx_utils import create_mcp_http_client

# How long a whole drive may take, and one request.
RUN_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 45.0


def setting(name: str, fallback: str) -> str:
    value = os.environ.get(name, "")
    return value if value else fallback


# Set for a server whose MCP endpoint sits behind an application's bearer-token middleware.
BEARER_TOKEN_ENV = "MCP_DRIVER_BEARER_TOKEN"


def server_for(url: str) -> str | Transport:
    """What a driver's Client connects to: `url` itself (the SDK's own Streamable HTTP
    transport) when MCP_DRIVER_BEARER_TOKEN is unset or empty; otherwise the same transport on
    an HTTP client made by the SDK's factory with `Authorization: Bearer <token>` among its
    default headers, so that every request the SDK makes (the probe, each POST, the GET stream,
    the closing DELETE) carries it. The token is never printed."""
    token = os.environ.get(BEARER_TOKEN_ENV, "")
    if not token:
        return url

    @asynccontextmanager
    async def bearer_transport() -> AsyncIterator[Any]:
        # The same client the transport makes for itself when given none, plus the header;
        # given one, the transport leaves closing it to us.
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http_client:
            async with streamable_http_client(url, http_client=http_client) as streams:
                yield streams

    return bearer_transport()


class Outcomes:
    """The checks' verdicts, printed as they come."""

    def __init__(self) -> None:
        self.failures = 0

    def ok(self, check: str, detail: str) -> None:
        print(f"ok   {check}: {detail}", flush=True)

    def fail(self, check: str, detail: str) -> None:
        self.failures += 1
        print(f"FAIL {check}: {detail}", flush=True)


class TraceHandler(logging.Handler):
    """Keeps the SDK's log records, printed only when something failed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname.lower():7} {record.name}: {clip(record.getMessage(), 600)}")


def clip(value: Any, length: int = 400) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= length else text[:length] + "…"


def result_text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def describe(error: BaseException) -> str:
    """The innermost messages of an exception (group), which say what went wrong."""
    inner = getattr(error, "exceptions", None)
    if inner:
        return "; ".join(describe(each) for each in inner)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def run_checks(
    out: Outcomes,
    checks: Iterable[tuple[str, Callable[[], Awaitable[None]]]],
    explain: Callable[[BaseException], Any] = str,
) -> None:
    """Runs each (name, check) in turn; one that raises fails under its name, with `explain`
    of what it raised, and the next runs all the same."""
    for name, check in checks:
        try:
            await check()
        except MCPError as error:
            out.fail(name, f"JSON-RPC error {error.code}: {clip(error.message)}")
        except Exception as error:  # the driver reports every failure and goes on
            out.fail(name, f"raised {type(error).__name__}: {clip(explain(error))}")


def run(drive: Callable[[str, Outcomes], Awaitable[None]], script: str, label: str, trace_env: str) -> int:
    """A driver's main(): runs `drive` against the one argument, the URL, within
    RUN_TIMEOUT_S, then prints the SDK log (on failure, or with `trace_env` set) and the
    `label`ed summary; returns the exit code: 0 if every check passed, 1 if not, 2 on bad
    usage of `script`."""
    if len(sys.argv) != 2:
        print(f"usage: python {script} <mcp-url>", file=sys.stderr)
        return 2
    url = sys.argv[1]
    trace = TraceHandler()
    logger = logging.getLogger("mcp")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(trace)
    logger.propagate = False
    out = Outcomes()

    def report() -> int:
        if out.failures or os.environ.get(trace_env):
            print("SDK log:\n" + "\n".join(trace.lines), file=sys.stderr)
        print(f"{label}: every expected outcome observed" if not out.failures else f"{label}: {out.failures} check(s) failed")
        return 0 if not out.failures else 1

    # A hang in teardown must not outlive the run either.
    def give_up() -> None:
        out.fail("run", f"still running after {RUN_TIMEOUT_S + 5:g} s")
        sys.stdout.flush()
        os._exit(report())

    watchdog = threading.Timer(RUN_TIMEOUT_S + 5, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        asyncio.run(asyncio.wait_for(drive(url, out), RUN_TIMEOUT_S))
    except asyncio.TimeoutError:
        out.fail("run", f"still running after {RUN_TIMEOUT_S:g} s")
    except BaseException as error:  # a failed connect surfaces as an exception group
        out.fail("session", f"{type(error).__name__}: {clip(describe(error), 600)}")
    watchdog.cancel()
    return report()

"""Drives a server on the 2025-11-25 lane with the Python SDK (`mcp`, see requirements.txt)
in legacy mode: the initialize handshake on Streamable HTTP, no tasks (this client has no
tasks support, so task tools are called as plain tools and answer inline).

Checks, in order:

  initialize   Client(url, mode="legacy") completes the handshake on a 2025 revision
  tools/list   lists the two tools below
  slow         tools/call of the slow tool with a progress callback: the result comes back
               inline with content, and at least DRIVE_MIN_PROGRESS progress notifications
               arrived for the call (a task run inline publishes its status as progress)
  confirm      tools/call of the confirming tool: the server's elicitation/create reaches
               the elicitation callback, which accepts; the inline result contains the
               expected text

Usage: python py_legacy_drive.py <mcp-url>
Prints one line per outcome ("ok ..." or "FAIL ..."); exits 0 only if every expected outcome
was observed, 1 otherwise, 2 on bad usage; gives up after 120 s. On failure (or with
PY_LEGACY_TRACE=1) the SDK's debug log goes to stderr.
With MCP_DRIVER_BEARER_TOKEN set, every HTTP request the SDK makes carries
`Authorization: Bearer <token>`, for an endpoint behind an application's bearer-token
middleware (see drive_support.server_for); the token is never printed.

The tools default to the fixture server's (examples/conformance); the environment can point
the driver at another server's tools (arguments and answers are JSON):

  DRIVE_SLOW_TOOL      slow_compute         DRIVE_SLOW_ARGS      {"seconds": 1}
  DRIVE_SLOW_EXPECT    computed             (text the result must contain)
  DRIVE_MIN_PROGRESS   1                    (progress notifications the slow call must get)
  DRIVE_CONFIRM_TOOL   confirm_delete       DRIVE_CONFIRM_ARGS   {"filename": "a.txt"}
  DRIVE_CONFIRM_ANSWER {"confirm": true}    (the elicitation answer's content)
  DRIVE_CONFIRM_EXPECT deleted=true
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from drive_support import REQUEST_TIMEOUT_S, Outcomes, clip, result_text, run, run_checks, server_for, setting
from mcp import Client, types

CLIENT_INFO = types.Implementation(name="durable-mcp-py-legacy-drive", version="0.0.0")


def json_setting(name: str, fallback: Any) -> Any:
    value = os.environ.get(name, "")
    if not value:
        return fallback
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        print(f"{name} is not JSON: {error}", file=sys.stderr)
        sys.exit(2)


SLOW_TOOL = setting("DRIVE_SLOW_TOOL", "slow_compute")
SLOW_ARGS = json_setting("DRIVE_SLOW_ARGS", {"seconds": 1})
SLOW_EXPECT = setting("DRIVE_SLOW_EXPECT", "computed")
MIN_PROGRESS = int(setting("DRIVE_MIN_PROGRESS", "1"))
CONFIRM_TOOL = setting("DRIVE_CONFIRM_TOOL", "confirm_delete")
CONFIRM_ARGS = json_setting("DRIVE_CONFIRM_ARGS", {"filename": "a.txt"})
CONFIRM_ANSWER = json_setting("DRIVE_CONFIRM_ANSWER", {"confirm": True})
CONFIRM_EXPECT = setting("DRIVE_CONFIRM_EXPECT", "deleted=true")


async def check_slow(client: Client, out: Outcomes) -> None:
    check = f"{SLOW_TOOL} inline, with progress"
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    result = await client.call_tool(
        SLOW_TOOL, SLOW_ARGS, read_timeout_seconds=REQUEST_TIMEOUT_S, progress_callback=on_progress
    )
    text = result_text(result)
    seen = ", ".join(
        f"{value:g}" + (f"/{total:g}" if total is not None else "") + (f" {message!r}" if message else "")
        for value, total, message in progress
    )
    if result.is_error:
        out.fail(check, f"the result is a tool error: {clip(text)}")
    elif not result.content:
        out.fail(check, "the result has no content")
    elif SLOW_EXPECT not in text:
        out.fail(check, f"the result text {clip(text)!r} lacks {SLOW_EXPECT!r}")
    elif len(progress) < MIN_PROGRESS:
        out.fail(check, f"{len(progress)} progress notification(s), expected at least {MIN_PROGRESS} (result {clip(text, 80)!r})")
    else:
        out.ok(check, f"{len(progress)} progress notification(s) [{clip(seen, 300)}] -> result {clip(text, 80)!r}")


async def check_confirm(client: Client, out: Outcomes, asked: list[types.ElicitRequestParams]) -> None:
    check = f"{CONFIRM_TOOL} inline, with elicitation"
    before = len(asked)
    result = await client.call_tool(CONFIRM_TOOL, CONFIRM_ARGS, read_timeout_seconds=REQUEST_TIMEOUT_S)
    text = result_text(result)
    questions = asked[before:]
    if not questions:
        out.fail(check, f"the elicitation callback was never called (result {clip(text)!r})")
    elif result.is_error:
        out.fail(check, f"the result is a tool error: {clip(text)}")
    elif CONFIRM_EXPECT not in text:
        out.fail(check, f"the result text {clip(text)!r} lacks {CONFIRM_EXPECT!r}")
    else:
        message = getattr(questions[0], "message", "")
        out.ok(check, f"elicitation {clip(message, 80)!r} accepted -> result {clip(text, 80)!r}")


async def drive(url: str, out: Outcomes) -> None:
    asked: list[types.ElicitRequestParams] = []
    trace = logging.getLogger("mcp.drive")

    async def on_elicitation(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        trace.debug("elicitation/create received: %s", params)
        asked.append(params)
        return types.ElicitResult(action="accept", content=CONFIRM_ANSWER)

    async def on_message(message: Any) -> None:
        trace.debug("received: %s", message)

    async with Client(
        server_for(url),
        mode="legacy",
        client_info=CLIENT_INFO,
        elicitation_callback=on_elicitation,
        message_handler=on_message,
        read_timeout_seconds=REQUEST_TIMEOUT_S,
    ) as client:
        server = client.server_info
        named = f"{server.name} {server.version}" if server is not None else "(unnamed)"
        out.ok("initialize", f"protocol {client.protocol_version}, server {named}")
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        names = [tool.name for tool in tools]
        missing = [name for name in dict.fromkeys([SLOW_TOOL, CONFIRM_TOOL]) if name not in names]
        if missing:
            out.fail("tools/list", f"missing {', '.join(missing)} among {', '.join(names)}")
        else:
            out.ok("tools/list", f"{len(tools)} tools, among them {SLOW_TOOL} and {CONFIRM_TOOL}")
        checks = (
            (f"{SLOW_TOOL} inline", lambda: check_slow(client, out)),
            (f"{CONFIRM_TOOL} inline", lambda: check_confirm(client, out, asked)),
        )
        await run_checks(out, checks)


def main() -> int:
    return run(drive, "py_legacy_drive.py", "py legacy", "PY_LEGACY_TRACE")


if __name__ == "__main__":
    sys.exit(main())

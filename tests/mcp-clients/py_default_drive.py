"""Drives a server on the 2026-07-28 lane with the Python SDK (`mcp`, see requirements.txt)
in its default mode: `server/discover`, no Tasks extension declared, the `elicitation`
capability declared (through the callback). Task tools that are not `required` are called
as plain tools: the server waits for the task inline and asks the task's questions as input
rounds (`InputRequiredResult`), which the SDK's `call_tool` answers through the elicitation
callback and retries with `requestState`.

Checks, in order:

  discover     Client(url) (no mode=) negotiates 2026-07-28 through server/discover, and
               declares no extension (so not the Tasks extension)
  sleeps       the slow tool with {"seconds": 1, "label": "py"}: a result that is not an
               error, whose text contains "computed py"
  asks twice   the two-question tool: the elicitation callback is called exactly twice, first
               with "Your name?" (answered "Ada"), then with a question that mentions "Ada"
               (answered "green"); the result text is "name=Ada colour=green"
  asks once    the confirming tool: one elicitation (answered confirm=true), result
               "deleted=true"
  outlives the inline deadline
               the slow tool with {"seconds": DRIVE_LONG_SECONDS}, longer than the server's
               inline deadline: the call raises MCPError -32021 whose message says the task
               is "still running" and whose data.taskId names it
  required     the required tool: MCPError -32021 up front (no task runs inline)

Usage: python py_default_drive.py <mcp-url>
Prints one line per outcome ("ok ..." or "FAIL ..."); exits 0 only if every expected outcome
was observed, 1 otherwise, 2 on bad usage; gives up after 120 s. On failure (or with
PY_DEFAULT_TRACE=1) the SDK's debug log goes to stderr.
With MCP_DRIVER_BEARER_TOKEN set, every HTTP request the SDK makes carries
`Authorization: Bearer <token>`, for an endpoint behind an application's bearer-token
middleware (see drive_support.server_for); the token is never printed.

The tools default to the fixture server's (examples/conformance); the environment can point
the driver at another server's tools with the same contracts:

  DRIVE_SLOW_TOOL      slow_compute      ({"seconds", "label"} -> "computed {label}")
  DRIVE_TWICE_TOOL     ask_twice         (asks `name`, then `colour` -> "name=X colour=Y")
  DRIVE_CONFIRM_TOOL   confirm_delete    ({"filename"}, asks `confirm` -> "deleted=true")
  DRIVE_REQUIRED_TOOL  failing_job       (a task tool marked required)
  DRIVE_LONG_SECONDS   8                 (must exceed the server's inline deadline)
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from drive_support import REQUEST_TIMEOUT_S, Outcomes, clip, describe, result_text, run, run_checks, server_for, setting
from mcp import Client, MCPError, types

CLIENT_INFO = types.Implementation(name="durable-mcp-py-default-drive", version="0.0.0")
MODERN_VERSION = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# What a task tool the client cannot call as it is (required, or past the inline deadline)
# answers: MissingRequiredClientCapability.
MISSING_CAPABILITY = -32021
# The answers the elicitation callback gives, by the requested field.
ANSWERS: dict[str, Any] = {"name": "Ada", "colour": "green", "confirm": True}


def seconds_setting(name: str, fallback: float) -> float:
    value = os.environ.get(name, "")
    if not value:
        return fallback
    try:
        return float(value)
    except ValueError:
        print(f"{name} is not a number of seconds: {value!r}", file=sys.stderr)
        sys.exit(2)


SLOW_TOOL = setting("DRIVE_SLOW_TOOL", "slow_compute")
TWICE_TOOL = setting("DRIVE_TWICE_TOOL", "ask_twice")
CONFIRM_TOOL = setting("DRIVE_CONFIRM_TOOL", "confirm_delete")
REQUIRED_TOOL = setting("DRIVE_REQUIRED_TOOL", "failing_job")
LONG_SECONDS = seconds_setting("DRIVE_LONG_SECONDS", 8.0)
# Sent as an integer when it is one, as a person would write it.
LONG_ARGUMENT: int | float = int(LONG_SECONDS) if LONG_SECONDS.is_integer() else LONG_SECONDS


class Asked:
    """The elicitation requests the callback answered, in order."""

    def __init__(self) -> None:
        self.requests: list[types.ElicitRequestParams] = []

    def since(self, before: int) -> list[str]:
        """The messages of the requests answered after the first `before`."""
        return [getattr(params, "message", "") for params in self.requests[before:]]


def expect_text(result: types.CallToolResult, expected: str) -> str | None:
    """Why `result` is not a successful result containing `expected`, or None if it is."""
    text = result_text(result)
    if result.is_error:
        return f"the result is a tool error: {clip(text)}"
    if expected not in text:
        return f"the result text {clip(text)!r} lacks {expected!r}"
    return None


async def check_discover(client: Client, out: Outcomes) -> None:
    check = "discover"
    version = client.protocol_version
    discovered = client.session.discover_result is not None
    # The SDK has no public view of the capabilities it stamps on each request; they are built
    # from the callbacks given and from `Client.extensions`, the only way to declare an
    # extension (the Tasks extension included), so that is what is checked here. The server
    # confirms it too: had the client declared the Tasks extension, the calls below would
    # answer tasks (`resultType: "task"`), not results.
    declared = [getattr(extension, "identifier", "?") for extension in client.extensions or ()]
    if version != MODERN_VERSION:
        out.fail(check, f"negotiated protocol {version!r}, expected {MODERN_VERSION!r}")
    elif not discovered:
        out.fail(check, f"protocol {version} without a server/discover result")
    elif declared:
        out.fail(check, f"the client declares the extensions {', '.join(declared)}, expected none")
    else:
        server = client.server_info
        named = f"{server.name} {server.version}" if server is not None else "(unnamed)"
        tasks = "advertised" if TASKS_EXTENSION in (client.server_capabilities.extensions or {}) else "not advertised"
        out.ok(
            check,
            f"protocol {version} through server/discover, server {named} (Tasks extension {tasks}); "
            "the client declares no extension",
        )


async def check_sleeps(client: Client, out: Outcomes) -> None:
    check = "sleeps"
    started = time.monotonic()
    result = await client.call_tool(SLOW_TOOL, {"seconds": 1, "label": "py"})
    elapsed = time.monotonic() - started
    why = expect_text(result, "computed py")
    if why:
        out.fail(check, why)
    else:
        out.ok(check, f"{SLOW_TOOL} 1 s inline -> {clip(result_text(result), 80)!r} ({elapsed:.1f} s)")


async def check_asks_twice(client: Client, out: Outcomes, asked: Asked) -> None:
    check = "asks twice"
    before = len(asked.requests)
    started = time.monotonic()
    result = await client.call_tool(TWICE_TOOL, {})
    elapsed = time.monotonic() - started
    messages = asked.since(before)
    name, colour = ANSWERS["name"], ANSWERS["colour"]
    expected = f"name={name} colour={colour}"
    if len(messages) != 2:
        out.fail(check, f"{len(messages)} elicitation(s) {messages!r}, expected 2 (result {clip(result_text(result))!r})")
    elif messages[0] != "Your name?":
        out.fail(check, f"the first question is {messages[0]!r}, expected 'Your name?'")
    elif name not in messages[1]:
        out.fail(check, f"the second question {messages[1]!r} does not mention the first answer {name!r}")
    elif why := expect_text(result, expected):
        out.fail(check, why)
    elif result_text(result).strip() != expected:
        out.fail(check, f"the result text is {clip(result_text(result))!r}, expected {expected!r}")
    else:
        out.ok(
            check,
            f"{TWICE_TOOL}: {messages[0]!r} -> {name!r}, {messages[1]!r} -> {colour!r}, "
            f"result {result_text(result)!r} ({elapsed:.1f} s)",
        )


async def check_asks_once(client: Client, out: Outcomes, asked: Asked) -> None:
    check = f"asks once ({CONFIRM_TOOL})"
    before = len(asked.requests)
    started = time.monotonic()
    result = await client.call_tool(CONFIRM_TOOL, {"filename": "a.txt"})
    elapsed = time.monotonic() - started
    messages = asked.since(before)
    if len(messages) != 1:
        out.fail(check, f"{len(messages)} elicitation(s) {messages!r}, expected 1 (result {clip(result_text(result))!r})")
    elif why := expect_text(result, "deleted=true"):
        out.fail(check, why)
    else:
        out.ok(check, f"{clip(messages[0], 80)!r} -> confirm=true, result {clip(result_text(result), 80)!r} ({elapsed:.1f} s)")


async def check_outlives_deadline(client: Client, out: Outcomes) -> None:
    check = "outlives the inline deadline"
    started = time.monotonic()
    try:
        result = await client.call_tool(SLOW_TOOL, {"seconds": LONG_ARGUMENT, "label": "long"})
    except MCPError as error:
        elapsed = time.monotonic() - started
        data = error.error.data
        task_id = data.get("taskId") if isinstance(data, dict) else None
        if error.code != MISSING_CAPABILITY:
            out.fail(check, f"JSON-RPC error {error.code}: {clip(error.message)}, expected {MISSING_CAPABILITY}")
        elif "still running" not in error.message:
            out.fail(check, f"the -32021 message {clip(error.message)!r} does not say the task is 'still running'")
        elif not isinstance(task_id, str) or not task_id:
            out.fail(check, f"the -32021 error's data {clip(data)!r} has no taskId")
        else:
            out.ok(
                check,
                f"{SLOW_TOOL} {LONG_SECONDS:g} s -> {MISSING_CAPABILITY} after {elapsed:.1f} s, "
                f"task {task_id}: {clip(error.message, 160)!r}",
            )
        return
    elapsed = time.monotonic() - started
    out.fail(
        check,
        f"the {LONG_SECONDS:g} s call answered a result after {elapsed:.1f} s "
        f"({clip(result_text(result), 80)!r}): is the server's inline deadline longer than that?",
    )


async def check_required(client: Client, out: Outcomes) -> None:
    check = "required"
    started = time.monotonic()
    try:
        result = await client.call_tool(REQUIRED_TOOL, {})
    except MCPError as error:
        elapsed = time.monotonic() - started
        if error.code != MISSING_CAPABILITY:
            out.fail(check, f"JSON-RPC error {error.code}: {clip(error.message)}, expected {MISSING_CAPABILITY}")
        else:
            out.ok(check, f"{REQUIRED_TOOL} -> {MISSING_CAPABILITY} after {elapsed:.1f} s: {clip(error.message, 160)!r}")
        return
    out.fail(check, f"{REQUIRED_TOOL} answered a result ({clip(result_text(result), 80)!r}), expected {MISSING_CAPABILITY}")


async def drive(url: str, out: Outcomes) -> None:
    asked = Asked()
    trace = logging.getLogger("mcp.drive")

    async def on_elicitation(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        trace.debug("elicitation received: %s", params)
        asked.requests.append(params)
        schema = getattr(params, "requested_schema", None) or {}
        fields = schema.get("properties", {}) if isinstance(schema, dict) else {}
        content = {field: ANSWERS[field] for field in fields if field in ANSWERS}
        if not content:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    async def on_message(message: Any) -> None:
        trace.debug("received: %s", message)

    # The default mode: no mode= (so "auto": server/discover, falling back to initialize).
    async with Client(
        server_for(url),
        client_info=CLIENT_INFO,
        elicitation_callback=on_elicitation,
        message_handler=on_message,
        read_timeout_seconds=REQUEST_TIMEOUT_S,
    ) as client:
        checks = (
            ("discover", lambda: check_discover(client, out)),
            ("sleeps", lambda: check_sleeps(client, out)),
            ("asks twice", lambda: check_asks_twice(client, out, asked)),
            (f"asks once ({CONFIRM_TOOL})", lambda: check_asks_once(client, out, asked)),
            ("outlives the inline deadline", lambda: check_outlives_deadline(client, out)),
            ("required", lambda: check_required(client, out)),
        )
        await run_checks(out, checks, describe)


def main() -> int:
    return run(drive, "py_default_drive.py", "py default", "PY_DEFAULT_TRACE")


if __name__ == "__main__":
    sys.exit(main())

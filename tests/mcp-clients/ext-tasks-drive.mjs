// Drives the conformance fixture server through the official MCP Tasks client library
// (`@modelcontextprotocol/ext-tasks`) on the 2026-07-28 wire, and checks the outcomes:
//
//   confirm_delete      task -> input_required -> tasks/update -> completed, "deleted=true"
//   slow_compute (60 s) task -> cancel -> cancelled (seen through the library or tasks/get)
//
// Usage: node ext-tasks-drive.mjs <mcp-url>
// Prints one line per outcome ("ok ..." or "FAIL ..."); exits 0 only if every expected
// outcome was observed; on failure (or with EXT_TASKS_TRACE=1) the wire exchanges go to
// stderr. `cargo xtask clients` runs it against a freshly started server.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const PROTOCOL_VERSION = "2026-07-28";
const CLIENT_INFO = { name: "durable-mcp-ext-tasks-drive", version: "0.0.0" };
const CLIENT_CAPABILITIES = { elicitation: {} };
/** Longest a single check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 30_000;
/** Longest the whole run may take: a hung request must not hang CI. */
const RUN_TIMEOUT_MS = 120_000;

const url = process.argv[2];
if (!url) {
  console.error("usage: node ext-tasks-drive.mjs <mcp-url>");
  process.exit(2);
}

let failures = 0;
let nextId = 1;
/** Every exchange on the wire, printed to stderr if a check fails. */
const trace = [];

setTimeout(() => {
  fail("run", `still running after ${RUN_TIMEOUT_MS} ms`);
  finish();
}, RUN_TIMEOUT_MS).unref();

function pass(check, detail) {
  console.log(`ok   ${check}: ${detail}`);
}

function fail(check, detail) {
  failures += 1;
  console.log(`FAIL ${check}: ${detail}`);
}

/** The routing headers a 2026-07-28 request carries, derived from its body. */
function routingHeaders(request) {
  const headers = { "MCP-Protocol-Version": PROTOCOL_VERSION, "Mcp-Method": request.method };
  const params = request.params ?? {};
  if (request.method === "tools/call" && typeof params.name === "string") {
    headers["Mcp-Name"] = params.name;
  } else if (request.method.startsWith("tasks/") && typeof params.taskId === "string") {
    headers["Mcp-Name"] = params.taskId;
  }
  return headers;
}

/** Reads one JSON-RPC response from a JSON or an SSE body. */
async function readResponse(response, id) {
  const type = response.headers.get("content-type") ?? "";
  const text = await response.text();
  if (!type.includes("text/event-stream")) {
    return JSON.parse(text);
  }
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data === "") continue;
    const message = JSON.parse(data);
    if (message.id === id) return message;
  }
  throw new Error(`no response with id ${id} in the event stream`);
}

/**
 * The host side of the library's V2 path: one HTTP POST per request. Headers the library
 * supplies (it sets `Mcp-Name` on tasks/*) are merged case-insensitively over ours, so no
 * header is ever sent twice.
 */
async function rawDispatch(request, options = {}) {
  const id = nextId++;
  const body = { jsonrpc: "2.0", id, method: request.method, params: request.params };
  const headers = new Headers({
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  });
  for (const [name, value] of Object.entries(routingHeaders(request))) headers.set(name, value);
  for (const [name, value] of Object.entries(options.context?.headers ?? {})) headers.set(name, value);
  const sent = [...headers].filter(([name]) => name.startsWith("mcp")).map(([name, value]) => `${name}: ${value}`);
  trace.push(`-> ${sent.join("  ")}\n   ${JSON.stringify(body)}`);
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal: options.signal,
  });
  let message;
  try {
    message = await readResponse(response, id);
  } catch (error) {
    throw new Error(`${request.method}: HTTP ${response.status}, unreadable body: ${error.message}`);
  }
  trace.push(`<- HTTP ${response.status} ${JSON.stringify(message)}`);
  if (message.error) return { kind: "error", error: message.error };
  if (message.result === undefined) {
    throw new Error(`${request.method}: HTTP ${response.status}, neither result nor error`);
  }
  return { kind: "result", result: message.result };
}

/** Answers every elicitation the server asks: confirm, with a name and a colour for good measure. */
async function onInputRequest(request, context) {
  if (request.kind !== "elicitation") {
    throw new Error(`unexpected ${request.kind} input request`);
  }
  inputRequests.push({ taskId: context.taskId, inputId: context.inputId, delivery: context.delivery });
  return { action: "accept", content: { confirm: true } };
}

/** Input requests the library routed to us, in order. */
const inputRequests = [];

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** Posts one tasks/get outside the library, for the state after a cancel. */
async function taskStatus(taskId) {
  const request = {
    method: "tasks/get",
    params: {
      taskId,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": {
          ...CLIENT_CAPABILITIES,
          extensions: { "io.modelcontextprotocol/tasks": {} },
        },
      },
    },
  };
  const response = await rawDispatch(request);
  if (response.kind === "error") {
    throw new Error(`tasks/get: error ${JSON.stringify(response.error)}`);
  }
  return response.result.status;
}

async function confirmDelete(session) {
  const check = "confirm_delete";
  const events = [];
  const execution = await session.callTool("confirm_delete", { filename: "a.txt" });
  if (execution.kind !== "task") {
    fail(check, `expected a task, got an ${execution.kind} result`);
    await execution.close();
    return;
  }
  const { outcome } = await withTimeout(
    execution.settle({ onEvent: (event) => events.push(event.type === "task" ? event.task.status : `outcome:${event.outcome.status}`) }),
    check,
  );
  const seen = events.join(" -> ");
  const asked = inputRequests.filter((request) => request.taskId === execution.handle.taskId);
  if (asked.length === 0) {
    fail(check, `the library never routed the elicitation to us (statuses: ${seen})`);
  } else if (!events.includes("input_required")) {
    fail(check, `input_required was never observed (statuses: ${seen})`);
  } else if (outcome.status !== "completed") {
    fail(check, `ended ${outcome.status}${outcome.error ? ` (${outcome.error.message})` : ""} (statuses: ${seen})`);
  } else if (!resultText(outcome.result).includes("deleted=true")) {
    fail(check, `completed with ${JSON.stringify(outcome.result)}, expected text deleted=true`);
  } else {
    pass(check, `input_required (key ${asked[0].inputId}, via ${asked[0].delivery}) -> tasks/update -> completed "${resultText(outcome.result)}" (statuses: ${seen})`);
  }
}

async function cancelSlowCompute(session) {
  const check = "slow_compute cancel";
  const execution = await session.callTool("slow_compute", { seconds: 60, label: "never" });
  if (execution.kind !== "task") {
    fail(check, `expected a task, got an ${execution.kind} result`);
    await execution.close();
    return;
  }
  const taskId = execution.handle.taskId;
  const settled = execution.settle();
  await execution.cancel();
  const { outcome } = await withTimeout(settled, check);
  // The spec lets a client stop polling after a cancel; ask the server ourselves as well.
  let status = await taskStatus(taskId);
  const deadline = Date.now() + CHECK_TIMEOUT_MS;
  while (status !== "cancelled" && status !== "completed" && status !== "failed" && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    status = await taskStatus(taskId);
  }
  if (outcome.status === "completed" || outcome.status === "failed") {
    fail(check, `the library settled ${outcome.status} instead of cancelled`);
  } else if (status !== "cancelled") {
    fail(check, `tasks/get after tasks/cancel says ${status}, expected cancelled`);
  } else {
    pass(check, `task ${taskId}: tasks/cancel -> library outcome ${outcome.status}, tasks/get status ${status}`);
  }
}

async function main() {
  const client = new Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const session = createTaskSessionFromClient(client, {
    endpointId: "durable-mcp-ext-tasks-drive",
    rawDispatch,
    v2RequestFraming: {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: CLIENT_INFO,
      clientCapabilities: CLIENT_CAPABILITIES,
    },
    onInputRequest,
  });
  for (const check of [confirmDelete, cancelSlowCompute]) {
    try {
      await check(session);
    } catch (error) {
      fail(check.name, `threw ${error?.stack ?? error}`);
    }
  }
  await session.close().catch(() => {});
  await client.close().catch(() => {});
}

function finish() {
  if (failures > 0 || process.env.EXT_TASKS_TRACE) console.error(`wire trace (tools/call and tasks/*):\n${trace.join("\n")}`);
  console.log(failures === 0 ? "ext-tasks: every expected outcome observed" : `ext-tasks: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

try {
  await main();
} catch (error) {
  fail("session", `${error?.stack ?? error}`);
}
finish();

// Drives the conformance fixture server through the official MCP Tasks client library
// (`@modelcontextprotocol/ext-tasks`) on the 2026-07-28 wire, and checks the outcomes:
//
//   confirm_delete      task -> input_required -> tasks/update -> completed, "deleted=true"
//   slow_compute (60 s) task -> cancel -> cancelled (seen through the library or tasks/get)
//
// both as the library does it alone (it polls tasks/get), and then by push:
//
//   confirm_delete      followed over a `subscriptions/listen` stream that this script opens
//                       (the library opens none); each `notifications/tasks` frame is handed
//                       to the library through the notification listener of its session port
//                       (`ConnectedMcpSessionPort.onNotification`, under `withTasks`), and that
//                       session's tasks/get is never answered, so every state the library
//                       reports came from the stream: it must see input_required, answer it
//                       (tasks/update), then complete with "deleted=true"; the stream must be
//                       acknowledged for the task and end with its `complete` response.
//
// Usage: node ext-tasks-drive.mjs <mcp-url>
// Prints one line per outcome ("ok ..." or "FAIL ..."); exits 0 only if every expected
// outcome was observed; on failure (or with EXT_TASKS_TRACE=1) the wire exchanges go to
// stderr. `cargo xtask clients` runs it against a freshly started server.
// With MCP_DRIVER_BEARER_TOKEN set, every HTTP request (the SDK's, our own POSTs and the
// listen stream) carries `Authorization: Bearer <token>`, for an endpoint behind an
// application's bearer-token middleware (see bearer.mjs); the token is never printed.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createSessionPortFromClient,
  createTaskSessionFromClient,
  withTasks,
} from "@modelcontextprotocol/ext-tasks/client";

import { bearerFetch } from "./bearer.mjs";
import { listenMessages } from "./listen-stream.mjs";

const PROTOCOL_VERSION = "2026-07-28";
const CLIENT_INFO = { name: "durable-mcp-ext-tasks-drive", version: "0.0.0" };
const CLIENT_CAPABILITIES = { elicitation: {} };
/** What the library puts in the `_meta` of the requests it frames for the 2026-07-28 wire. */
const V2_FRAMING = { protocolVersion: PROTOCOL_VERSION, clientInfo: CLIENT_INFO, clientCapabilities: CLIENT_CAPABILITIES };
/** Longest a single check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 30_000;
/** Longest the whole run may take: a hung request must not hang CI. */
const RUN_TIMEOUT_MS = 120_000;
/** The fetch of every HTTP request this script makes: with the bearer token, if one is set. */
const httpFetch = bearerFetch();

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

/** The key of the listen request's id in the `_meta` of each frame of its stream. */
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";

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
  const response = await httpFetch(url, {
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

function withTimeout(promise, what, ms = CHECK_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** The 2026-07-28 request envelope of a request sent outside the library, declaring the extension. */
function envelope() {
  return {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": {
      ...CLIENT_CAPABILITIES,
      extensions: { "io.modelcontextprotocol/tasks": {} },
    },
  };
}

/** Posts one tasks/get outside the library, for the state after a cancel. */
async function taskStatus(taskId) {
  const request = { method: "tasks/get", params: { taskId, _meta: envelope() } };
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

/**
 * Opens a `subscriptions/listen` stream for `taskId` with our own code and hands each
 * `notifications/tasks` frame to `deliver` as it arrives, until the stream ends. Records in
 * `seen` what it carried, as it comes: the listen request's id, the task ids acknowledged, the
 * statuses of the frames delivered, the closing response (undefined until it came), and
 * anything out of order.
 */
async function followByListen(taskId, deliver, seen, signal) {
  const id = nextId++;
  seen.id = id;
  const body = {
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: { notifications: { taskIds: [taskId] }, _meta: envelope() },
  };
  const headers = { "MCP-Protocol-Version": PROTOCOL_VERSION, "Mcp-Method": "subscriptions/listen" };
  trace.push(`-> mcp-method: subscriptions/listen\n   ${JSON.stringify(body)}`);
  const onOpen = (status, type) => trace.push(`<- HTTP ${status} ${type} (listen ${id})`);
  for await (const message of listenMessages(url, body, { headers, signal, onOpen })) {
    trace.push(`<- listen ${id}: ${JSON.stringify(message)}`);
    if (seen.end !== undefined) {
      seen.problems.push(`${message.method ?? "a response"} after the closing response`);
      continue;
    }
    if (message.method === undefined && message.id === id) {
      seen.end = message;
      continue;
    }
    if (message.params?._meta?.[SUBSCRIPTION_ID] !== id) {
      seen.problems.push(`${message.method} without _meta["${SUBSCRIPTION_ID}"] = ${id}`);
    }
    if (message.method === "notifications/subscriptions/acknowledged") {
      if (seen.acknowledged !== undefined || seen.statuses.length > 0) {
        seen.problems.push("an acknowledgement that is not the first frame");
      }
      seen.acknowledged = message.params?.notifications?.taskIds;
    } else if (message.method === "notifications/tasks") {
      if (seen.acknowledged === undefined) seen.problems.push("notifications/tasks before the acknowledgement");
      if (message.params?.taskId !== taskId) seen.problems.push(`a frame for task ${message.params?.taskId}`);
      seen.statuses.push(message.params?.status);
      deliver(message);
    } else {
      seen.problems.push(`an unexpected message ${JSON.stringify(message)}`);
    }
  }
  return seen;
}

/**
 * `confirm_delete` followed by push: a session of its own (on its own SDK Client: the library
 * adapts a Client once), whose port hears our listen stream's frames as notifications and
 * whose tasks/get is held unanswered until the library gives it up, so that the library learns
 * of its task only from the stream. Prints one line for what the library saw and one for the
 * stream.
 */
async function confirmDeleteByPush() {
  const check = "confirm_delete by push";
  const streamCheck = "listen stream";
  const client = new Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: httpFetch }));
  let heldPolls = 0;
  const updates = [];
  const libraryErrors = [];
  const dispatch = async (request, options = {}) => {
    if (request.method === "tasks/get") {
      heldPolls += 1;
      trace.push(`-- tasks/get ${request.params?.taskId} held unanswered (the push session must hear of it by push)`);
      return new Promise((_, reject) => {
        const abandoned = () => reject(options.signal.reason ?? new Error("tasks/get abandoned"));
        if (options.signal?.aborted) abandoned();
        else options.signal?.addEventListener("abort", abandoned, { once: true });
      });
    }
    if (request.method === "tasks/update") updates.push(request.params?.taskId);
    return rawDispatch(request, options);
  };
  const clientPort = createSessionPortFromClient(client, "durable-mcp-ext-tasks-drive-push", {
    rawDispatch: dispatch,
    v2RequestFraming: V2_FRAMING,
  });
  // The library's session port contract: the host calls each listener the session registered
  // with `onNotification` for every notification it receives. This port is the SDK Client's,
  // with the listen stream as one more source of notifications.
  const listeners = new Set();
  const port = {
    endpointId: clientPort.endpointId,
    taskCapabilities: clientPort.taskCapabilities,
    get invalidated() {
      return clientPort.invalidated;
    },
    dispatch: (request, options) => clientPort.dispatch(request, options),
    onServerRequest: (handler) => clientPort.onServerRequest(handler),
    onInvalidated: (listener) => clientPort.onInvalidated(listener),
    onNotification(listener) {
      const stopClient = clientPort.onNotification(listener);
      listeners.add(listener);
      return () => {
        stopClient();
        listeners.delete(listener);
      };
    },
  };
  const session = withTasks(port, { onInputRequest, onError: (error) => libraryErrors.push(error) });
  const stop = new AbortController();
  try {
    const execution = await session.callTool("confirm_delete", { filename: "pushed.txt" });
    if (execution.kind !== "task") {
      fail(check, `expected a task, got an ${execution.kind} result`);
      await execution.close();
      return;
    }
    const taskId = execution.handle.taskId;
    const events = [];
    const settled = execution
      .settle({ onEvent: (event) => events.push(event.type === "task" ? event.task.status : `outcome:${event.outcome.status}`) })
      .then((settlement) => ({ settlement }), (error) => ({ error }));
    const deliver = (message) => {
      for (const listener of [...listeners]) listener(message);
    };
    const frames = { id: undefined, acknowledged: undefined, statuses: [], end: undefined, problems: [] };
    const deadline = Date.now() + CHECK_TIMEOUT_MS;
    const streamed = followByListen(taskId, deliver, frames, stop.signal).then(
      () => ({}),
      (error) => ({ error }),
    );
    // The library can only settle from the stream: once the stream has ended, it gets 5 s more.
    const grace = streamed
      .then(() => new Promise((resolve) => setTimeout(resolve, 5_000).unref()))
      .then(() => ({ error: new Error("the library had not settled 5 s after the listen stream ended") }));
    const library = await withTimeout(Promise.race([settled, grace]), check).catch((error) => ({ error }));
    // The stream shares the check's deadline (it ends once the task has, so with the library).
    const stream = await withTimeout(streamed, streamCheck, Math.max(deadline - Date.now(), 1_000)).catch(
      (error) => ({ error }),
    );

    const seen = events.join(" -> ");
    const asked = inputRequests.filter((request) => request.taskId === taskId);
    const updated = updates.filter((id) => id === taskId).length;
    const outcome = library.settlement?.outcome;
    if (library.error) {
      fail(check, `${library.error.message} (statuses: ${seen})`);
    } else if (libraryErrors.length > 0) {
      // A frame failing the library's schema lands here (a zod issue list: kept to one line).
      const first = libraryErrors[0].message.replace(/\s+/g, " ").slice(0, 400);
      fail(check, `the library reported ${libraryErrors.length} error(s), the first: ${first}`);
    } else if (!events.includes("input_required")) {
      fail(check, `input_required was never observed (statuses: ${seen})`);
    } else if (asked.length === 0) {
      fail(check, `the library never routed the pushed elicitation to us (statuses: ${seen})`);
    } else if (updated === 0) {
      fail(check, `the library sent no tasks/update for the task (statuses: ${seen})`);
    } else if (outcome.status !== "completed") {
      fail(check, `ended ${outcome.status}${outcome.error ? ` (${outcome.error.message})` : ""} (statuses: ${seen})`);
    } else if (!resultText(outcome.result).includes("deleted=true")) {
      fail(check, `completed with ${JSON.stringify(outcome.result)}, expected text deleted=true`);
    } else {
      pass(
        check,
        `input_required (key ${asked[0].inputId}, via ${asked[0].delivery}) -> tasks/update -> completed ` +
          `"${resultText(outcome.result)}" (statuses: ${seen}; all pushed: the session's tasks/get go unanswered, ${heldPolls} sent)`,
      );
    }

    const acknowledged = JSON.stringify(frames.acknowledged);
    if (stream.error) {
      fail(streamCheck, `${stream.error.message} (acknowledged ${acknowledged}; frames: ${frames.statuses.join(" -> ")})`);
    } else if (frames.problems.length > 0) {
      fail(streamCheck, frames.problems.join("; "));
    } else if (acknowledged !== JSON.stringify([taskId])) {
      fail(streamCheck, `acknowledged taskIds ${acknowledged}, expected ["${taskId}"]`);
    } else if (frames.statuses.length === 0) {
      fail(streamCheck, "no notifications/tasks frame");
    } else if (frames.end === undefined) {
      fail(streamCheck, `ended without its complete response (frames: ${frames.statuses.join(" -> ")})`);
    } else if (frames.end.result?.resultType !== "complete") {
      fail(streamCheck, `ended with ${JSON.stringify(frames.end)}, expected a complete result`);
    } else if (frames.end.result._meta?.[SUBSCRIPTION_ID] !== frames.id) {
      fail(streamCheck, `the complete response lacks _meta["${SUBSCRIPTION_ID}"] = ${frames.id}: ${JSON.stringify(frames.end)}`);
    } else {
      pass(
        streamCheck,
        `subscription ${frames.id}: acknowledged ${acknowledged}; ${frames.statuses.length} notifications/tasks ` +
          `(${frames.statuses.join(" -> ")}) handed to the library; ended with its complete response`,
      );
    }
  } finally {
    stop.abort();
    await session.close().catch(() => {});
    clientPort[Symbol.dispose]();
    await client.close().catch(() => {});
  }
}

async function main() {
  const client = new Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: httpFetch }));
  const session = createTaskSessionFromClient(client, {
    endpointId: "durable-mcp-ext-tasks-drive",
    rawDispatch,
    v2RequestFraming: V2_FRAMING,
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
  try {
    await confirmDeleteByPush();
  } catch (error) {
    fail(confirmDeleteByPush.name, `threw ${error?.stack ?? error}`);
  }
}

function finish() {
  if (failures > 0 || process.env.EXT_TASKS_TRACE) console.error(`wire trace (tools/call, tasks/* and subscriptions/listen):\n${trace.join("\n")}`);
  console.log(failures === 0 ? "ext-tasks: every expected outcome observed" : `ext-tasks: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

try {
  await main();
} catch (error) {
  fail("session", `${error?.stack ?? error}`);
}
finish();

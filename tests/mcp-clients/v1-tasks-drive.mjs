// Drives a server on the 2025-11-25 lane (initialize handshake, Streamable HTTP, experimental
// core tasks) through the v1 TypeScript SDK (`@modelcontextprotocol/sdk`) and its experimental
// tasks client, and checks the outcomes:
//
//   initialize          declares elicitation and tasks.requests.elicitation.create; the server
//                       must advertise tasks.requests.tools.call
//   tools/list          lists the three tools below
//   slow                callToolStream(task: {ttl}) -> taskCreated -> taskStatus... -> result with content
//   confirm             the same, with an elicitation/create answered by our handler; the
//                       result text must contain the expected text ("deleted=true")
//   tasks/list          lists the tasks created above
//   cancel              a long task, tasks/cancel -> the answer says cancelled, so does tasks/get
//
// Usage: node v1-tasks-drive.mjs <mcp-url>
// Prints one line per outcome ("ok ..." or "FAIL ..."); exits 0 only if every expected outcome
// was observed, 1 otherwise, 2 on bad usage; gives up after 120 s. On failure (or with
// V1_TASKS_TRACE=1) the messages exchanged and the HTTP requests go to stderr.
// With MCP_DRIVER_BEARER_TOKEN set, every HTTP request the SDK makes (POST, GET stream,
// DELETE) carries `Authorization: Bearer <token>`, for an endpoint behind an application's
// bearer-token middleware (see bearer.mjs); the token is never printed.
//
// The tools default to the fixture server's (examples/conformance); the environment can
// point the driver at another server's tools (arguments and answers are JSON):
//
//   DRIVE_SLOW_TOOL      slow_compute              DRIVE_SLOW_ARGS      {"seconds":1}
//   DRIVE_SLOW_EXPECT    computed                  (text the result must contain)
//   DRIVE_CONFIRM_TOOL   confirm_delete            DRIVE_CONFIRM_ARGS   {"filename":"a.txt"}
//   DRIVE_CONFIRM_ANSWER {"confirm":true}          (the elicitation answer's content)
//   DRIVE_CONFIRM_EXPECT deleted=true
//   DRIVE_CANCEL_TOOL    slow_compute              DRIVE_CANCEL_ARGS    {"seconds":30}
//   DRIVE_TASK_TTL_MS    60000                     (the ttl asked for in params.task)

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

import { bearerFetch } from "./bearer.mjs";

const CLIENT_INFO = { name: "durable-mcp-v1-tasks-drive", version: "0.0.0" };
const CLIENT_CAPABILITIES = {
  elicitation: {},
  tasks: { requests: { elicitation: { create: {} } } },
};
/** Longest one request may wait (tasks/result blocks until the task ends). */
const REQUEST_TIMEOUT_MS = 45_000;
/** Longest the whole run may take: a hung request must not hang CI. */
const RUN_TIMEOUT_MS = 120_000;
/** The fetch under every HTTP request: with the bearer token, if one is set. */
const httpFetch = bearerFetch();
const RELATED_TASK = "io.modelcontextprotocol/related-task";

const url = process.argv[2];
if (!url) {
  console.error("usage: node v1-tasks-drive.mjs <mcp-url>");
  process.exit(2);
}

function setting(name, fallback) {
  const value = process.env[name];
  return value === undefined || value === "" ? fallback : value;
}

function jsonSetting(name, fallback) {
  const value = process.env[name];
  if (value === undefined || value === "") return fallback;
  try {
    return JSON.parse(value);
  } catch (error) {
    console.error(`${name} is not JSON: ${error.message}`);
    process.exit(2);
  }
}

const config = {
  slow: { tool: setting("DRIVE_SLOW_TOOL", "slow_compute"), args: jsonSetting("DRIVE_SLOW_ARGS", { seconds: 1 }) },
  slowExpect: setting("DRIVE_SLOW_EXPECT", "computed"),
  confirm: {
    tool: setting("DRIVE_CONFIRM_TOOL", "confirm_delete"),
    args: jsonSetting("DRIVE_CONFIRM_ARGS", { filename: "a.txt" }),
  },
  confirmAnswer: jsonSetting("DRIVE_CONFIRM_ANSWER", { confirm: true }),
  confirmExpect: setting("DRIVE_CONFIRM_EXPECT", "deleted=true"),
  cancel: { tool: setting("DRIVE_CANCEL_TOOL", "slow_compute"), args: jsonSetting("DRIVE_CANCEL_ARGS", { seconds: 30 }) },
  ttl: Number(setting("DRIVE_TASK_TTL_MS", "60000")),
};

let failures = 0;
/** Messages and HTTP exchanges, printed to stderr on failure. */
const trace = [];
/** Every task this run created, by check. */
const created = new Map();
/** The elicitation requests our handler answered, in order. */
const elicitations = [];

function pass(check, detail) {
  console.log(`ok   ${check}: ${detail}`);
}

function fail(check, detail) {
  failures += 1;
  console.log(`FAIL ${check}: ${detail}`);
}

function note(check, detail) {
  console.log(`note ${check}: ${detail}`);
}

function clip(value, length = 400) {
  const text = (typeof value === "string" ? value : JSON.stringify(value))?.replace(/\s+/g, " ");
  return text === undefined || text.length <= length ? text : `${text.slice(0, length)}…`;
}

function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** fetch (with the bearer token, if set), with each HTTP request and its answer's status and type written to the trace. */
async function tracingFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  const shown = [...headers]
    .filter(([name]) => name.startsWith("mcp") || name === "accept" || name === "last-event-id")
    .map(([name, value]) => `${name}: ${value}`)
    .join("  ");
  const response = await httpFetch(input, init);
  trace.push(
    `   HTTP ${init.method ?? "GET"} [${shown}] -> ${response.status} ${response.headers.get("content-type") ?? "(no body type)"}` +
      (response.headers.get("mcp-session-id") ? ` session ${response.headers.get("mcp-session-id")}` : ""),
  );
  return response;
}

/** Writes every JSON-RPC message the transport sends or delivers to the trace. */
function traceMessages(transport) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    trace.push(`-> ${clip(message, 600)}`);
    return send(message, options);
  };
  let deliver;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () =>
      deliver &&
      ((message, extra) => {
        trace.push(`<- ${clip(message, 600)}`);
        deliver(message, extra);
      }),
    set: (handler) => {
      deliver = handler;
    },
  });
}

function withDeadline(promise, what, ms = REQUEST_TIMEOUT_MS + 5_000) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still running after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Runs one tool as a task through callToolStream and collects what it yields. */
async function streamTask(client, call, check) {
  const seen = { created: undefined, statuses: [], result: undefined, error: undefined };
  const stream = client.experimental.tasks.callToolStream(
    { name: call.tool, arguments: call.args },
    undefined,
    { task: { ttl: config.ttl }, timeout: REQUEST_TIMEOUT_MS },
  );
  for await (const message of stream) {
    if (message.type === "taskCreated") {
      seen.created = message.task;
      created.set(check, message.task.taskId);
    } else if (message.type === "taskStatus") {
      seen.statuses.push(message.task.status);
    } else if (message.type === "result") {
      seen.result = message.result;
    } else if (message.type === "error") {
      seen.error = message.error;
    }
  }
  return seen;
}

function describe(seen) {
  const statuses = seen.statuses.length > 0 ? seen.statuses.join(" -> ") : "none";
  return `task ${seen.created?.taskId ?? "(none)"}, statuses ${statuses}`;
}

async function checkInitialize(client) {
  const capabilities = client.getServerCapabilities() ?? {};
  const transport = client.transport;
  const session = transport?.sessionId ? `session ${transport.sessionId}` : "no Mcp-Session-Id";
  if (!capabilities.tasks?.requests?.tools?.call) {
    fail("initialize", `the server does not advertise capabilities.tasks.requests.tools.call: ${clip(capabilities)}`);
    return false;
  }
  pass(
    "initialize",
    `protocol ${transport?.protocolVersion}, ${session}, capabilities.tasks ${clip(capabilities.tasks)}`,
  );
  return true;
}

async function checkToolsList(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: REQUEST_TIMEOUT_MS });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const wanted = [...new Set([config.slow.tool, config.confirm.tool, config.cancel.tool])];
  const missing = wanted.filter((name) => !tools.some((tool) => tool.name === name));
  if (missing.length > 0) {
    fail("tools/list", `missing ${missing.join(", ")} among ${tools.map((tool) => tool.name).join(", ")}`);
    return;
  }
  const support = wanted
    .map((name) => `${name} (taskSupport ${tools.find((tool) => tool.name === name).execution?.taskSupport ?? "unset"})`)
    .join(", ");
  pass("tools/list", `${tools.length} tools, among them ${support}`);
}

async function checkSlow(client) {
  const check = `${config.slow.tool} as a task`;
  const seen = await withDeadline(streamTask(client, config.slow, "slow"), check);
  const text = resultText(seen.result);
  if (!seen.created) {
    fail(check, `no taskCreated (${clip(seen.error?.message ?? "no error either", 300)})`);
  } else if (seen.statuses.length === 0) {
    fail(check, `no taskStatus was yielded (${describe(seen)})`);
  } else if (seen.error) {
    fail(check, `ended with an error: ${clip(seen.error.message, 300)} (${describe(seen)})`);
  } else if (!seen.result || (seen.result.content ?? []).length === 0) {
    fail(check, `no result with content (${describe(seen)})`);
  } else if (seen.result.isError) {
    fail(check, `the result is a tool error: ${clip(text)} (${describe(seen)})`);
  } else if (!text.includes(config.slowExpect)) {
    fail(check, `the result text ${clip(text)} lacks ${JSON.stringify(config.slowExpect)} (${describe(seen)})`);
  } else {
    pass(check, `taskCreated (ttl ${seen.created.ttl}, pollInterval ${seen.created.pollInterval}) -> ${describe(seen)} -> result ${clip(text, 80)}`);
  }
}

async function checkConfirm(client) {
  const check = `${config.confirm.tool} as a task, with elicitation`;
  const before = elicitations.length;
  const seen = await withDeadline(streamTask(client, config.confirm, "confirm"), check);
  const asked = elicitations.slice(before);
  const text = resultText(seen.result);
  if (!seen.created) {
    fail(check, `no taskCreated (${clip(seen.error?.message ?? "no error either", 300)})`);
    return;
  }
  if (asked.length === 0) {
    fail(check, `the elicitation handler was never called (${describe(seen)}; ${clip(seen.error?.message ?? text)})`);
  } else if (seen.error) {
    fail(check, `ended with an error: ${clip(seen.error.message, 300)} (${describe(seen)})`);
  } else if (!seen.result) {
    fail(check, `no result (${describe(seen)})`);
  } else if (seen.result.isError || !text.includes(config.confirmExpect)) {
    fail(check, `the result ${clip(seen.result)} lacks ${JSON.stringify(config.confirmExpect)} (${describe(seen)})`);
  } else {
    pass(check, `${describe(seen)}; elicitation "${clip(asked[0].message, 80)}" answered -> result ${clip(text, 80)}`);
  }
  if (asked.length > 0) {
    const relatedTask = asked[0].meta?.[RELATED_TASK]?.taskId;
    if (relatedTask !== seen.created.taskId) {
      note(check, `the elicitation/create carried no ${RELATED_TASK} _meta for the task (got ${clip(asked[0].meta)})`);
    }
  }
  if (!seen.statuses.includes("input_required")) {
    note(check, "input_required was never seen by tasks/get polling");
  }
}

async function checkList(client) {
  const check = "tasks/list";
  const tasks = [];
  let cursor;
  do {
    const page = await client.experimental.tasks.listTasks(cursor, { timeout: REQUEST_TIMEOUT_MS });
    tasks.push(...page.tasks);
    cursor = page.nextCursor;
  } while (cursor);
  const ids = [...created.values()];
  const missing = ids.filter((id) => !tasks.some((task) => task.taskId === id));
  if (ids.length === 0) {
    fail(check, "no task was created earlier, nothing to look for");
  } else if (missing.length > 0) {
    fail(check, `missing ${missing.join(", ")} among ${tasks.length} listed tasks`);
  } else {
    const statuses = ids.map((id) => `${id}: ${tasks.find((task) => task.taskId === id).status}`).join(", ");
    pass(check, `${tasks.length} tasks listed, including ${statuses}`);
  }
}

async function checkCancel(client) {
  const check = `${config.cancel.tool} cancelled`;
  const stream = client.experimental.tasks.callToolStream(
    { name: config.cancel.tool, arguments: config.cancel.args },
    undefined,
    { task: { ttl: config.ttl }, timeout: REQUEST_TIMEOUT_MS },
  );
  // Stop at taskCreated: leaving the loop ends the generator, so it polls no further.
  let task;
  let error;
  for await (const message of stream) {
    if (message.type === "taskCreated") {
      task = message.task;
      break;
    }
    if (message.type === "error") error = message.error;
    if (message.type === "result") break;
  }
  if (!task) {
    fail(check, `no taskCreated (${clip(error?.message ?? "the tool answered without a task", 300)})`);
    return;
  }
  created.set("cancel", task.taskId);
  const answer = await client.experimental.tasks.cancelTask(task.taskId, { timeout: REQUEST_TIMEOUT_MS });
  const after = await client.experimental.tasks.getTask(task.taskId, { timeout: REQUEST_TIMEOUT_MS });
  if (answer.status !== "cancelled") {
    fail(check, `tasks/cancel answered status ${answer.status}, expected cancelled: ${clip(answer)}`);
  } else if (after.status !== "cancelled") {
    fail(check, `tasks/cancel answered cancelled but tasks/get then says ${after.status}`);
  } else {
    pass(check, `task ${task.taskId}: tasks/cancel -> status cancelled, tasks/get -> cancelled`);
  }
}

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tracingFetch });
  traceMessages(transport);
  const client = new Client(CLIENT_INFO, { capabilities: CLIENT_CAPABILITIES });
  client.onerror = (error) => trace.push(`!! transport: ${error?.message ?? error}`);
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push({ message: request.params.message, meta: request.params._meta, task: request.params.task });
    if (request.params.task) {
      // A task-augmented elicitation would need a CreateTaskResult from us; this driver
      // answers directly, so say so plainly rather than let the SDK reject our answer.
      throw new Error("this driver does not run elicitations as tasks");
    }
    return { action: "accept", content: config.confirmAnswer };
  });
  await withDeadline(client.connect(transport, { timeout: REQUEST_TIMEOUT_MS }), "initialize");
  if (await checkInitialize(client)) {
    for (const check of [checkToolsList, checkSlow, checkConfirm, checkList, checkCancel]) {
      try {
        await check(client);
      } catch (error) {
        fail(check.name.replace(/^check/, "").toLowerCase(), `threw ${error?.stack ?? error}`);
      }
    }
  }
  // DELETE the session if the server issued one (a 405 is fine), then close.
  await transport.terminateSession().catch((error) => trace.push(`!! DELETE: ${error?.message ?? error}`));
  await client.close().catch(() => {});
}

function finish() {
  if (failures > 0 || process.env.V1_TASKS_TRACE) {
    console.error(`trace (-> sent, <- received, HTTP exchanges indented):\n${trace.join("\n")}`);
  }
  console.log(failures === 0 ? "v1 tasks: every expected outcome observed" : `v1 tasks: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

setTimeout(() => {
  fail("run", `still running after ${RUN_TIMEOUT_MS} ms`);
  finish();
}, RUN_TIMEOUT_MS).unref();

try {
  await main();
} catch (error) {
  fail("session", `${error?.stack ?? error}`);
}
finish();

// Drives an MCP server that requires OAuth through the official TypeScript SDK's OAuth client,
// the way a real client does, then runs a task on it:
//
//   1. the first MCP request gets 401 with WWW-Authenticate: Bearer resource_metadata="..."
//   2. the SDK reads the Protected Resource Metadata (RFC 9728), then the authorization
//      server's metadata (RFC 8414 or OpenID discovery), registers a public client (RFC 7591)
//      and builds an authorization URL with PKCE (S256) and `resource` (RFC 8707)
//   3. our redirectToAuthorization plays the user's browser: it follows that URL with plain
//      fetch (manual redirects, a cookie jar) through the authorization server's login and
//      consent pages as --user (see authorization-server.mjs), and catches the redirect to the
//      client's redirect_uri, which is never served
//   4. transport.finishAuth exchanges the code for tokens; the client connects again
//   5. 2025 era (@modelcontextprotocol/sdk Client, 2025-11-25): initialize, tools/list,
//      slow_compute {"seconds":1} as a task streamed to its result
//      2026 era (@modelcontextprotocol/client, 2026-07-28, with @modelcontextprotocol/ext-tasks):
//      server/discover, tools/list, slow_compute {"seconds":1} as a task settled by polling,
//      then tasks/get says completed
//
// Usage: node client-flow.mjs <mcp-url> --user <name> [--scope "a b"] [--era 2026|2025]
//   --scope  ask for exactly these scopes instead of the ones the server suggests (in its
//            challenge or metadata): the client registers with them and the authorization
//            request carries them. Without it the SDK's own choice stands.
//   --era    which SDK and protocol revision (default 2026)
//
// Prints one line per outcome, `ok <check>: <detail>` or `FAIL <check>: <detail>`, plus
// `token <access token>` and `task <task id>` once known, for a caller that checks what
// another user may do with them. Exits 0 only if every check passed, 1 otherwise, 2 on bad
// usage; gives up after 120 s. On failure (or with OAUTH_FLOW_TRACE=1) the HTTP exchanges
// (statuses, WWW-Authenticate, error bodies) and MCP messages go to stderr.

import { parseArgs } from "node:util";

const RUN_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 30_000;
const CLIENT_INFO = { name: "durable-mcp-oauth-client-flow", version: "0.0.0" };
/** Where the authorization server sends the browser back; nothing listens there, by design. */
const REDIRECT_URL = "http://127.0.0.1:9/oauth/callback";

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      user: { type: "string" },
      scope: { type: "string" },
      era: { type: "string", default: "2026" },
    },
  });
} catch (error) {
  console.error(error.message);
  process.exit(2);
}
const { values: options, positionals } = parsed;
if (positionals.length !== 1 || !options.user || !["2025", "2026"].includes(options.era)) {
  console.error('usage: node client-flow.mjs <mcp-url> --user <name> [--scope "..."] [--era 2026|2025]');
  process.exit(2);
}
const mcpUrl = new URL(positionals[0]);

let failures = 0;
const trace = [];

function pass(check, detail) {
  console.log(`ok ${check}: ${detail}`);
}

function fail(check, detail) {
  failures += 1;
  console.log(`FAIL ${check}: ${detail}`);
}

function clip(value, length = 500) {
  const text = (typeof value === "string" ? value : JSON.stringify(value))?.replace(/\s+/g, " ");
  return text === undefined || text.length <= length ? text : `${text.slice(0, length)}…`;
}

function finish() {
  if (failures > 0 || process.env.OAUTH_FLOW_TRACE) {
    console.error(`trace (HTTP exchanges, -> sent / <- received MCP messages):\n${trace.join("\n")}`);
  }
  console.log(failures === 0 ? "client-flow: every check passed" : `client-flow: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

setTimeout(() => {
  fail("run", `still running after ${RUN_TIMEOUT_MS} ms`);
  finish();
}, RUN_TIMEOUT_MS).unref();

/** Every HTTP exchange of the run, MCP and OAuth alike, for the trace. */
const exchanges = [];

/**
 * fetch that records each exchange. With --scope, a dynamic registration asks for that scope
 * (the SDK registers with the scope it picked from the server's challenge, and the
 * authorization server only lets a client ask for scopes it registered).
 */
async function tracingFetch(input, init = {}) {
  const method = init.method ?? "GET";
  const url = String(input instanceof Request ? input.url : input);
  if (options.scope && method === "POST" && typeof init.body === "string" && init.body.includes('"redirect_uris"')) {
    init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), scope: options.scope }) };
  }
  const headers = new Headers(init.headers);
  const sent = ["mcp-protocol-version", "mcp-method", "mcp-session-id"]
    .filter((name) => headers.has(name))
    .map((name) => `${name}: ${headers.get(name)}`);
  if (headers.has("authorization")) sent.push(`authorization: ${headers.get("authorization").split(" ")[0]} …`);
  const response = await fetch(input, init);
  const exchange = { method, url, status: response.status, challenge: response.headers.get("www-authenticate") };
  exchanges.push(exchange);
  let line = `   HTTP ${method} ${url} [${sent.join("  ")}] -> ${response.status} ${response.headers.get("content-type") ?? ""}`;
  if (exchange.challenge) line += `\n      WWW-Authenticate: ${exchange.challenge}`;
  if (response.status >= 400) line += `\n      body: ${clip(await response.clone().text())}`;
  trace.push(line);
  return response;
}

/** Plays the user's browser: follows the authorization URL to the redirect back to the client. */
async function authorizeInBrowser(authorizationUrl, user) {
  const jar = new Map();
  let url = new URL(authorizationUrl);
  let request = { method: "GET" };
  for (let hop = 0; hop < 20; hop += 1) {
    const headers = new Headers(request.headers);
    if (jar.size > 0) headers.set("cookie", [...jar].map(([name, value]) => `${name}=${value}`).join("; "));
    const response = await tracingFetch(url, { ...request, headers, redirect: "manual" });
    // Paths are ignored: the authorization server's cookies do not collide by name.
    for (const cookie of response.headers.getSetCookie()) {
      const [pair, ...attributes] = cookie.split(";");
      const name = pair.slice(0, pair.indexOf("=")).trim();
      const value = pair.slice(pair.indexOf("=") + 1).trim();
      const expired = attributes.some((attribute) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(attribute));
      if (expired || value === "") jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      const next = new URL(location, url);
      if (next.href.startsWith(REDIRECT_URL)) return next.searchParams;
      url = next;
      request = { method: "GET" };
      continue;
    }
    const page = await response.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (response.status !== 200 || !prompt) {
      throw new Error(`the authorization server answered ${response.status} at ${url.pathname}: ${clip(page, 300)}`);
    }
    // The login page takes any name; the consent page grants whatever was asked.
    const form = prompt === "login" ? { prompt, login: user, password: "unused" } : { prompt };
    request = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    };
  }
  throw new Error("too many redirects before the authorization server sent the browser back");
}

/** An OAuth client that keeps everything in memory, for one run. */
class MemoryOAuthProvider {
  constructor(user) {
    this.user = user;
    this.saved = {};
    /** The authorization URL the SDK built and the callback parameters it led to. */
    this.authorizationUrl = undefined;
    this.callback = undefined;
  }

  get redirectUrl() {
    return REDIRECT_URL;
  }

  get clientMetadata() {
    return {
      client_name: CLIENT_INFO.name,
      redirect_uris: [REDIRECT_URL],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(options.scope ? { scope: options.scope } : {}),
    };
  }

  clientInformation() {
    return this.saved.client;
  }

  saveClientInformation(client) {
    this.saved.client = client;
  }

  tokens() {
    return this.saved.tokens;
  }

  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }

  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }

  codeVerifier() {
    return this.saved.verifier;
  }

  saveDiscoveryState(state) {
    this.saved.discovery = state;
  }

  discoveryState() {
    return this.saved.discovery;
  }

  invalidateCredentials(scope) {
    trace.push(`   the SDK invalidated credentials: ${scope}`);
    if (scope === "all" || scope === "client") delete this.saved.client;
    if (scope === "all" || scope === "tokens") delete this.saved.tokens;
    if (scope === "all" || scope === "verifier") delete this.saved.verifier;
    if (scope === "all" || scope === "discovery") delete this.saved.discovery;
  }

  async redirectToAuthorization(authorizationUrl) {
    const url = new URL(authorizationUrl);
    if (options.scope) url.searchParams.set("scope", options.scope);
    this.authorizationUrl = url;
    this.callback = await authorizeInBrowser(url, this.user);
  }
}

function decodeJwt(token) {
  const [header, payload] = String(token)
    .split(".")
    .slice(0, 2)
    .map((part) => JSON.parse(Buffer.from(part, "base64url").toString("utf8")));
  return { header, payload };
}

function withDeadline(promise, what, ms = REQUEST_TIMEOUT_MS) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still running after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** Wraps a transport so the MCP messages it carries land in the trace. */
function traceMessages(transport) {
  const send = transport.send.bind(transport);
  transport.send = (message, sendOptions) => {
    trace.push(`-> ${clip(message, 600)}`);
    return send(message, sendOptions);
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
  return transport;
}

/**
 * Steps 1 to 4 for either SDK: connects unauthorized, expects the SDK to have gone through
 * the authorization server, finishes the authorization, and connects again.
 * `sdk` carries the era's Client, transport class, UnauthorizedError, client options and how
 * to call finishAuth.
 */
async function authorizeAndConnect(sdk, provider) {
  const first = new sdk.Client(CLIENT_INFO, sdk.clientOptions);
  const firstTransport = new sdk.Transport(mcpUrl, { authProvider: provider, fetch: tracingFetch });
  let connected = false;
  try {
    await withDeadline(first.connect(firstTransport), "the unauthorized connect");
    connected = true;
  } catch (error) {
    if (!(error instanceof sdk.UnauthorizedError)) throw error;
  }
  await first.close().catch(() => {});
  if (connected) {
    fail("challenge", "the server let an unauthorized client connect");
    return undefined;
  }

  const challenged = exchanges.find((exchange) => exchange.url.startsWith(mcpUrl.href) && exchange.status === 401);
  const resourceMetadata = /resource_metadata="([^"]+)"/.exec(challenged?.challenge ?? "")?.[1];
  if (!challenged) {
    fail("challenge", "no request to the MCP endpoint was answered 401");
  } else if (!/^Bearer\b/i.test(challenged.challenge ?? "") || !resourceMetadata) {
    fail("challenge", `401 with WWW-Authenticate ${JSON.stringify(challenged.challenge)}, no Bearer resource_metadata`);
  } else {
    pass("challenge", `${challenged.method} ${challenged.url} -> 401, WWW-Authenticate: ${challenged.challenge}`);
  }
  const prm = exchanges.find((exchange) => exchange.url.includes("/.well-known/oauth-protected-resource") && exchange.status === 200);
  const asMetadata = exchanges.find(
    (exchange) => /\/\.well-known\/(oauth-authorization-server|openid-configuration)/.test(exchange.url) && exchange.status === 200,
  );
  if (!prm || !asMetadata) {
    fail("discovery", `protected resource metadata ${prm ? "read" : "never read"}, authorization server metadata ${asMetadata ? "read" : "never read"}`);
  } else {
    pass("discovery", `${prm.url}, then ${asMetadata.url}`);
  }

  const client = provider.clientInformation();
  const authorizationUrl = provider.authorizationUrl;
  if (!client?.client_id || !authorizationUrl) {
    fail("authorization", `the SDK ${client?.client_id ? "registered" : "did not register"} and ${authorizationUrl ? "did" : "did not"} ask for authorization`);
    return undefined;
  }
  const params = authorizationUrl.searchParams;
  const callback = provider.callback;
  if (params.get("code_challenge_method") !== "S256" || !params.get("resource") || !callback?.get("code")) {
    fail(
      "authorization",
      `authorization URL ${authorizationUrl.href} led to callback ${callback ?? "(none)"}: wanted PKCE S256, a resource and a code`,
    );
    return undefined;
  }
  pass(
    "authorization",
    `registered ${client.client_id}, logged in as ${provider.user}, scope ${params.has("scope") ? JSON.stringify(params.get("scope")) : "(none asked)"}, resource ${params.get("resource")}, code received`,
  );

  await withDeadline(sdk.finishAuth(firstTransport, callback), "the token exchange");
  const tokens = provider.tokens();
  if (!tokens?.access_token) {
    fail("token", "finishAuth left no access token");
    return undefined;
  }
  checkToken(tokens, client, params);

  const second = new sdk.Client(CLIENT_INFO, sdk.clientOptions);
  const transport = traceMessages(new sdk.Transport(mcpUrl, { authProvider: provider, fetch: tracingFetch }));
  second.onerror = (error) => trace.push(`!! transport: ${error?.message ?? error}`);
  await withDeadline(second.connect(transport), "the authorized connect");
  return { client: second, transport };
}

/** The access token is an RFC 9068 JWT for this resource and user. */
function checkToken(tokens, client, params) {
  console.log(`token ${tokens.access_token}`);
  let header;
  let payload;
  try {
    ({ header, payload } = decodeJwt(tokens.access_token));
  } catch (error) {
    fail("token", `the access token is not a JWT (${error.message})`);
    return;
  }
  const resource = params.get("resource");
  const audiences = [payload.aud].flat();
  const problems = [];
  if (header.typ !== "at+jwt") problems.push(`typ ${header.typ}`);
  if (!audiences.includes(resource)) problems.push(`aud ${JSON.stringify(payload.aud)} is not ${resource}`);
  if (payload.sub !== options.user) problems.push(`sub ${payload.sub}`);
  if (payload.client_id !== client.client_id) problems.push(`client_id ${payload.client_id}`);
  if (!payload.iss || !payload.exp || !payload.iat || !payload.jti) problems.push("iss, exp, iat or jti missing");
  const wanted = (options.scope ?? params.get("scope") ?? "").split(" ").filter((scope) => scope && scope !== "offline_access");
  const granted = String(payload.scope ?? "").split(" ");
  if (wanted.some((scope) => !granted.includes(scope))) problems.push(`scope ${JSON.stringify(payload.scope)} lacks some of ${wanted.join(" ")}`);
  if (problems.length > 0) {
    fail("token", `${problems.join("; ")} (header ${clip(header)}, payload ${clip(payload)})`);
  } else {
    pass(
      "token",
      `${header.alg} ${header.typ}, iss ${payload.iss}, sub ${payload.sub}, aud ${payload.aud}, scope ${JSON.stringify(payload.scope)}, ` +
        `expires in ${payload.exp - payload.iat} s${tokens.refresh_token ? ", with a refresh token" : ""}`,
    );
  }
}

async function listTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const slow = tools.find((tool) => tool.name === "slow_compute");
  if (!slow) {
    fail("tools/list", `no slow_compute among ${tools.map((tool) => tool.name).join(", ")}`);
  } else {
    pass("tools/list", `${tools.length} tools, slow_compute taskSupport ${slow.execution?.taskSupport ?? "unset"}`);
  }
}

async function run2025(provider) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { UnauthorizedError } = await import("@modelcontextprotocol/sdk/client/auth.js");
  const sdk = {
    Client,
    Transport: StreamableHTTPClientTransport,
    UnauthorizedError,
    clientOptions: { capabilities: {} },
    finishAuth: (transport, callback) => transport.finishAuth(callback.get("code")),
  };
  const connected = await authorizeAndConnect(sdk, provider);
  if (!connected) return;
  const { client, transport } = connected;
  const tasks = client.getServerCapabilities()?.tasks;
  pass("initialize", `protocol ${transport.protocolVersion}, ${transport.sessionId ? `session ${transport.sessionId}` : "no session"}, capabilities.tasks ${clip(tasks)}`);
  await listTools(client);

  const check = "slow_compute";
  if (!tasks?.requests?.tools?.call) {
    // A server without 2025-11-25 tasks still gets the call, plainly.
    const result = await withDeadline(client.callTool({ name: "slow_compute", arguments: { seconds: 1 } }), check);
    if (result.isError || !resultText(result).includes("computed")) fail(check, `plain call answered ${clip(result)}`);
    else pass(check, `plain call (no tasks capability): ${clip(resultText(result), 80)}`);
  } else {
    const seen = { task: undefined, statuses: [], result: undefined, error: undefined };
    const stream = client.experimental.tasks.callToolStream(
      { name: "slow_compute", arguments: { seconds: 1 } },
      undefined,
      { task: { ttl: 60_000 }, timeout: REQUEST_TIMEOUT_MS },
    );
    await withDeadline(
      (async () => {
        for await (const message of stream) {
          if (message.type === "taskCreated") {
            seen.task = message.task;
            console.log(`task ${message.task.taskId}`);
          } else if (message.type === "taskStatus") seen.statuses.push(message.task.status);
          else if (message.type === "result") seen.result = message.result;
          else if (message.type === "error") seen.error = message.error;
        }
      })(),
      check,
    );
    const text = resultText(seen.result);
    const statuses = seen.statuses.join(" -> ") || "none";
    if (!seen.task) fail(check, `no task was created (${clip(seen.error?.message ?? seen.result)})`);
    else if (seen.error) fail(check, `task ${seen.task.taskId} ended with ${clip(seen.error.message)} (statuses ${statuses})`);
    else if (!text.includes("computed") || seen.result.isError) fail(check, `task ${seen.task.taskId} answered ${clip(seen.result)}`);
    else pass(check, `task ${seen.task.taskId}: ${statuses} -> result ${clip(text, 80)}`);
  }
  await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}

const PROTOCOL_2026 = "2026-07-28";

async function run2026(provider) {
  const { Client, StreamableHTTPClientTransport, UnauthorizedError, withOAuth } = await import("@modelcontextprotocol/client");
  const { createTaskSessionFromClient } = await import("@modelcontextprotocol/ext-tasks/client");
  const sdk = {
    Client,
    Transport: StreamableHTTPClientTransport,
    UnauthorizedError,
    clientOptions: { capabilities: {}, versionNegotiation: { mode: { pin: PROTOCOL_2026 } } },
    finishAuth: (transport, callback) => transport.finishAuth(callback),
  };
  const connected = await authorizeAndConnect(sdk, provider);
  if (!connected) return;
  const { client } = connected;
  const extension = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/tasks"];
  pass("server/discover", `era ${client.getProtocolEra()}, tasks extension ${extension ? "offered" : "not offered"}`);
  await listTools(client);

  // The SDK's Client cannot carry 2026 task traffic; the tasks library takes it over a raw
  // request path, which still goes through the SDK's OAuth fetch wrapper.
  const authorizedFetch = withOAuth(provider, mcpUrl)(tracingFetch);
  let nextId = 1;
  const rawDispatch = async (request, dispatchOptions = {}) => {
    const id = nextId++;
    const headers = new Headers({
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": PROTOCOL_2026,
      "mcp-method": request.method,
    });
    const name = request.params?.name ?? request.params?.taskId;
    if (typeof name === "string") headers.set("mcp-name", name);
    for (const [header, value] of Object.entries(dispatchOptions.context?.headers ?? {})) headers.set(header, value);
    const body = { jsonrpc: "2.0", id, method: request.method, params: request.params };
    trace.push(`-> ${clip(body, 600)}`);
    const response = await authorizedFetch(mcpUrl, { method: "POST", headers, body: JSON.stringify(body), signal: dispatchOptions.signal });
    const message = await readResponse(response, id);
    trace.push(`<- ${clip(message, 600)}`);
    if (message.error) return { kind: "error", error: message.error };
    return { kind: "result", result: message.result };
  };
  const session = createTaskSessionFromClient(client, {
    endpointId: CLIENT_INFO.name,
    rawDispatch,
    v2RequestFraming: { protocolVersion: PROTOCOL_2026, clientInfo: CLIENT_INFO, clientCapabilities: {} },
  });

  const check = "slow_compute";
  const execution = await withDeadline(session.callTool("slow_compute", { seconds: 1 }), check);
  if (execution.kind !== "task") {
    fail(check, `expected a task, got an ${execution.kind} result`);
    await execution.close();
  } else {
    const taskId = execution.handle.taskId;
    console.log(`task ${taskId}`);
    const statuses = [];
    const { outcome } = await withDeadline(
      execution.settle({ onEvent: (event) => statuses.push(event.type === "task" ? event.task.status : `outcome ${event.outcome.status}`) }),
      check,
    );
    const got = await rawDispatch({ method: "tasks/get", params: { taskId, _meta: v2Meta() } });
    const status = got.result?.status;
    if (outcome.status !== "completed" || !resultText(outcome.result).includes("computed")) {
      fail(check, `task ${taskId} settled ${outcome.status}: ${clip(outcome.result ?? outcome.error)} (statuses ${statuses.join(" -> ")})`);
    } else if (status !== "completed") {
      fail(check, `task ${taskId} settled completed but tasks/get says ${clip(got.error ?? status)}`);
    } else {
      pass(check, `task ${taskId}: ${statuses.join(" -> ")}, result ${clip(resultText(outcome.result), 80)}; tasks/get: completed`);
    }
  }
  await session.close().catch(() => {});
  await client.close().catch(() => {});
}

/** The per-request envelope a 2026-07-28 request carries, for our own tasks/get. */
function v2Meta() {
  return {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_2026,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  };
}

/** One JSON-RPC response out of a JSON or an event-stream body. */
async function readResponse(response, id) {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`HTTP ${response.status}, not JSON: ${clip(text, 300)}`);
    }
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
  throw new Error(`HTTP ${response.status}: no response with id ${id} in the event stream`);
}

try {
  const provider = new MemoryOAuthProvider(options.user);
  await (options.era === "2025" ? run2025(provider) : run2026(provider));
} catch (error) {
  // One line on stdout; the stack goes with the trace.
  trace.push(`!! ${error?.stack ?? error}`);
  fail("flow", clip(`${error?.name ?? "error"}: ${error?.message ?? error}`, 1000));
}
finish();

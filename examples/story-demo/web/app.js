// story-demo page script: the home view (the stories, from MCP resources) and the task view
// (one story told by a durable MCP task, pushed over subscriptions/listen, or polled with
// tasks/get where the server does not push). Plain JS, no framework.
//
// Sections, in order:
//   wire      – JSON-RPC over POST /mcp with the 2026-07-28 envelope and routing headers
//   resources – resources/list and resources/read, cached by URI
//   host info – GET /demo/host (which host, whether it can restart)
//   home      – the story list and the start form
//   poller    – tasks/get on the server's interval, backoff while the host is away
//   stream    – subscriptions/listen: the task pushed as it changes; the poller rests meanwhile
//   fold      – a snapshot folded into the view state (journal merge, fork deadline, ending)
//   render    – the view state onto the DOM
//   answers   – tasks/update (fork, standing action), tasks/cancel, the restart button
//   task view – setting up `/task/<id>`
//   router    – `/` or `/task/<id>`, history.pushState, popstate
//   helpers   – small DOM utilities
"use strict";

/* ------------------------------------------------------------------ wire */

const PROTOCOL_VERSION = "2026-07-28";
const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
const STATUS_META = "io.durable-mcp-server/status";
const FORK_META = "io.durable-mcp-server/fork";

/** The server's origin: `?server=http://host:port`, or this page's own. */
const SERVER = (() => {
  const given = new URLSearchParams(location.search).get("server");
  if (!given) return location.origin;
  try {
    return new URL(given).origin;
  } catch {
    return location.origin;
  }
})();
const MCP_URL = `${SERVER}/mcp`;

/** An error the server answered (JSON-RPC error or HTTP status), as opposed to no answer. */
class ServerError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

let nextRequestId = 1;

/**
 * The routing headers a 2026-07-28 request carries, derived from its body: `Mcp-Name` is
 * the tool on tools/call, the URI on resources/read, the task id on tasks/*.
 */
function routingHeaders(method, params) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL_VERSION,
    "Mcp-Method": method,
  };
  if (method === "tools/call" && typeof params.name === "string") {
    headers["Mcp-Name"] = params.name;
  } else if (method === "resources/read" && typeof params.uri === "string") {
    headers["Mcp-Name"] = params.uri;
  } else if (method.startsWith("tasks/") && typeof params.taskId === "string") {
    headers["Mcp-Name"] = params.taskId;
  }
  return headers;
}

/** The JSON message one SSE event carries; null for a comment, an empty or a non-JSON event. */
function eventMessage(event) {
  const data = event
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).trimStart())
    .join("\n");
  if (data === "") return null;
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}

/** Reads the JSON-RPC message with `id` from a JSON or an SSE body. */
async function readMessage(response, id) {
  const type = response.headers.get("content-type") ?? "";
  const text = await response.text();
  if (!type.includes("text/event-stream")) return JSON.parse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const message = eventMessage(event);
    if (message?.id === id) return message;
  }
  throw new ServerError(`no response with id ${id} in the event stream`);
}

/**
 * POSTs the JSON-RPC request `method` to /mcp: `params` wrapped in the `_meta` envelope
 * (protocol version, the client capabilities declaring the Tasks extension), with the
 * routing headers. Resolves to `{id, response}`.
 */
async function post(method, params, signal) {
  const id = nextRequestId++;
  const body = {
    jsonrpc: "2.0",
    id,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS_EXTENSION]: {} } },
      },
    },
  };
  const response = await fetch(MCP_URL, {
    method: "POST",
    headers: routingHeaders(method, params),
    body: JSON.stringify(body),
    signal,
  });
  return { id, response };
}

/**
 * One JSON-RPC call. Resolves to the result; rejects with a ServerError for an answered
 * error, with a TypeError (from fetch) when nothing answered.
 */
async function rpc(method, params = {}) {
  const { id, response } = await post(method, params);
  let message;
  try {
    message = await readMessage(response, id);
  } catch (error) {
    throw new ServerError(`${method}: HTTP ${response.status}, unreadable answer (${error.message})`);
  }
  if (message.error) {
    throw new ServerError(`${method}: ${message.error.message ?? "error"}`, message.error.code);
  }
  if (message.result === undefined) throw new ServerError(`${method}: HTTP ${response.status}, no result`);
  return message.result;
}

/** GET or POST a JSON demo endpoint beside /mcp. */
async function demoEndpoint(path, method = "GET") {
  const response = await fetch(`${SERVER}${path}`, { method });
  if (!response.ok && response.status !== 202) throw new ServerError(`${path}: HTTP ${response.status}`);
  return response.status === 202 ? null : response.json();
}

/* -------------------------------------------------------------- resources */

const resourceCache = new Map();

/** Every resource the server lists, following cursors. */
async function listResources() {
  const all = [];
  let cursor;
  do {
    const result = await rpc("resources/list", cursor ? { cursor } : {});
    all.push(...(result.resources ?? []));
    cursor = result.nextCursor;
  } while (cursor);
  return all;
}

/** The text of a resource, read once per URI (a failed read is retried next time). */
function readResource(uri) {
  if (!resourceCache.has(uri)) {
    const read = rpc("resources/read", { uri }).then((result) => {
      const content = result.contents?.[0];
      if (!content || typeof content.text !== "string") throw new ServerError(`${uri}: no text content`);
      return content.text;
    });
    read.catch(() => resourceCache.delete(uri));
    resourceCache.set(uri, read);
  }
  return resourceCache.get(uri);
}

/** A story's manifest, parsed. */
async function readManifest(storyId) {
  return JSON.parse(await readResource(`story://${storyId}/manifest`));
}

/** An SVG resource as a data URL for an `<img>` (which never runs scripts or loads anything). */
async function svgDataUrl(uri) {
  const svg = await readResource(uri);
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/* ------------------------------------------------------------- host info */

/** `{host, restart}` from /demo/host, or null if it could not be read. */
let hostInfo = null;

async function loadHostInfo() {
  try {
    hostInfo = await demoEndpoint("/demo/host");
  } catch {
    hostInfo = null;
  }
  const badge = $("host-badge");
  badge.hidden = !hostInfo?.host;
  badge.textContent = hostInfo?.host ? `${hostInfo.host} host` : "";
  return hostInfo;
}

/* ------------------------------------------------------------------ home */

const MANIFEST_URI = /^story:\/\/([^/]+)\/manifest$/;

/** The route generation the home view was shown in (a load from an older one stops). */
let homeGeneration = 0;

async function showHome() {
  showView("home-view");
  document.title = "Story demo · durable-mcp";
  setStatus("loading", "loading stories…");
  const list = $("story-list");
  const error = $("home-error");
  let delay = 500;
  for (;;) {
    if (route.generation !== homeGeneration) return;
    try {
      const resources = await listResources();
      const ids = resources.map((r) => MANIFEST_URI.exec(r.uri)?.[1]).filter(Boolean);
      const manifests = await Promise.all(ids.map((id) => readManifest(id)));
      if (route.generation !== homeGeneration) return;
      list.replaceChildren(...manifests.map(storyCard));
      if (manifests.length === 0) list.append(el("li", { class: "story-card placeholder" }, "No stories on this server."));
      error.hidden = true;
      setStatus("ok", `${manifests.length} stor${manifests.length === 1 ? "y" : "ies"}`);
      return;
    } catch (e) {
      error.hidden = false;
      error.textContent = `Cannot load the stories (${e.message}); retrying…`;
      setStatus("away", "server unreachable — retrying…");
      await sleep(delay);
      delay = Math.min(delay * 2, 8000);
    }
  }
}

/** One story's card: title, blurb, default scene, name and seed fields, Start. */
function storyCard(manifest) {
  const card = $("story-card").content.firstElementChild.cloneNode(true);
  card.dataset.testid = `story-${manifest.id}`;
  card.id = `story-${manifest.id}`;
  card.querySelector(".story-name").textContent = manifest.title ?? manifest.id;
  card.querySelector(".story-blurb").textContent = manifest.blurb ?? "";
  const name = card.querySelector("input[name=name]");
  name.placeholder = manifest.defaultName ?? "";
  const img = card.querySelector(".story-thumb img");
  if (manifest.defaultScene) {
    svgDataUrl(manifest.defaultScene).then((url) => (img.src = url), () => {});
  }
  const form = card.querySelector("form");
  const note = card.querySelector(".story-error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    const seedText = form.elements.seed.value.trim();
    const args = { story: manifest.id };
    const nameText = name.value.trim();
    if (nameText) args.name = nameText.slice(0, 80);
    if (seedText) {
      if (!/^\d{1,15}$/.test(seedText)) {
        note.hidden = false;
        note.textContent = "The seed is a whole number ≥ 0 (or empty for a random one).";
        return;
      }
      args.seed = Number(seedText);
    }
    button.disabled = true;
    note.hidden = true;
    try {
      const taskId = await startStory(args);
      navigate(`/task/${encodeURIComponent(taskId)}`);
    } catch (e) {
      note.hidden = false;
      note.textContent = `Could not start: ${e.message}`;
      button.disabled = false;
    }
  });
  return card;
}

/** Calls the `start` tool as a task; resolves to the task id. */
async function startStory(args) {
  const result = await rpc("tools/call", { name: "start", arguments: args });
  if (result.resultType === "task" && typeof result.taskId === "string") return result.taskId;
  const text = (result.content ?? []).map((c) => c.text ?? "").join(" ");
  throw new ServerError(text || "the server did not start a task");
}

/* ---------------------------------------------------------------- poller */

const MIN_POLL_MS = 250;
const MAX_POLL_MS = 60_000;
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** The task view's state; a new one per visit of `/task/<id>`. */
let view = null;

function newView(taskId) {
  return {
    taskId,
    generation: route.generation,
    // poller
    timer: null,
    inFlight: false,
    again: false,
    failures: 0,
    restartRequestedAt: null,
    lastAppliedAt: -Infinity,
    // stream
    stream: null,
    streaming: false,
    streamRefused: false,
    streamDrops: 0,
    listenTimer: null,
    // folded state
    status: null,
    statusMessage: "",
    pollIntervalMs: 1000,
    story: null,
    manifest: null,
    scene: null,
    sprite: null,
    phase: null,
    progress: null,
    actions: null,
    lockedActionKey: null,
    journal: new Map(),
    fork: null,
    forkFirstSeen: new Map(),
    answeredForks: new Set(),
    ending: null,
    error: null,
  };
}

function clampInterval(ms) {
  const n = Number.isFinite(ms) ? ms : 1000;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, n));
}

function isCurrent(v) {
  return view === v && v.generation === route.generation;
}

/** Schedules the next poll in `ms`, replacing any scheduled one. */
function schedulePoll(v, ms) {
  clearTimeout(v.timer);
  v.timer = setTimeout(() => poll(v), ms);
}

/** Polls now (after an answer, an action, a cancel), unless a stream is open. */
function pollNow(v) {
  // With a stream open, the caller's change is pushed (the stream sends every change of the
  // task, in commit order), so no tasks/get is needed. One would even risk taking the view
  // back: its answer may land after a newer pushed snapshot of the same millisecond
  // (lastUpdatedAt), which `fold` cannot tell from an older one.
  if (v.streaming) return;
  if (v.inFlight) {
    v.again = true;
    return;
  }
  schedulePoll(v, 0);
}

/**
 * One tasks/get; folds, renders and schedules the next unless the task is over. The poller
 * rests while a stream is open: a poll answered after the stream opened is dropped (the
 * stream's first snapshot is at least as new).
 */
async function poll(v) {
  if (!isCurrent(v) || v.streaming) return;
  clearTimeout(v.timer);
  v.inFlight = true;
  let next;
  try {
    const task = await rpc("tasks/get", { taskId: v.taskId });
    if (!isCurrent(v) || v.streaming) return;
    v.failures = 0;
    fold(v, task);
    transport("poll");
    render(v);
    next = TERMINAL.has(v.status) ? null : clampInterval(v.pollIntervalMs);
    if (v.restartRequestedAt !== null) next = settleRestart(v, next);
  } catch (error) {
    if (!isCurrent(v) || v.streaming) return;
    if (error instanceof ServerError && error.code !== undefined) {
      // The server answered, and said no (an unknown task, say): not worth hammering.
      v.error = error.message;
      render(v);
      setStatus("error", "cannot read this task");
      next = null;
    } else {
      v.failures += 1;
      next = Math.min(500 * 2 ** (v.failures - 1), 8000);
      const secs = Math.round(next / 1000);
      setStatus(
        "away",
        v.restartRequestedAt !== null
          ? "host restarting…"
          : `host unreachable — retrying${secs >= 1 ? ` in ${secs}s` : ""}…`,
      );
    }
  } finally {
    v.inFlight = false;
  }
  if (!isCurrent(v)) return;
  if (v.again) {
    v.again = false;
    next = TERMINAL.has(v.status) ? null : 0;
  }
  if (next !== null) schedulePoll(v, next);
}

/* ---------------------------------------------------------------- stream */

// subscriptions/listen: one long POST whose event stream pushes the task each time it changes
// (the acknowledgement, then `notifications/tasks` carrying the task as tasks/get would, then
// the `complete` response once the task has ended). A pushed task is folded like a polled one,
// and the poller rests while a stream is acknowledged. A refused listen (an HTTP error, a
// JSON-RPC error such as -32601 from an older server, the task left out of the
// acknowledgement) leaves the page polling for the rest of the visit. A stream that ends
// without its `complete` response (the host restarted, the Worker's isolate was evicted), or
// with it before the task has ended (the host stopped), is opened again with backoff, and the
// poller runs until it is. The page's own restart button hands over to the poller until the
// host is back (see restartHost).

/** A stream silent for this long is given up (the server sends a keep-alive every 15 s). */
const STREAM_IDLE_MS = 45_000;

/** Opens a stream for the view's task, unless one is open, refused or not worth it now. */
function listen(v) {
  clearTimeout(v.listenTimer);
  if (!isCurrent(v) || v.stream || v.streamRefused || v.restartRequestedAt !== null) return;
  if (TERMINAL.has(v.status) || v.error) return;
  const stream = new AbortController();
  v.stream = stream;
  readStream(v, stream).then(
    (end) => streamEnded(v, end),
    (error) => streamEnded(v, error instanceof ServerError ? "refused" : "dropped"),
  );
}

/**
 * Reads one stream to its end: "complete" when its response came, "dropped" when it closed
 * without one; rejects with a ServerError when the server refused it.
 */
async function readStream(v, stream) {
  const params = { notifications: { taskIds: [v.taskId] } };
  const { id, response } = await post("subscriptions/listen", params, stream.signal);
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    throw new ServerError(`subscriptions/listen: HTTP ${response.status}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let idle;
  let buffer = "";
  let pushes = 0;
  try {
    for (;;) {
      clearTimeout(idle);
      idle = setTimeout(() => stream.abort(), STREAM_IDLE_MS);
      const { value, done } = await reader.read();
      if (done) return "dropped";
      const events = (buffer + value).split(/\r?\n\r?\n/);
      buffer = events.pop();
      for (const message of events.map(eventMessage)) {
        if (message?.method === "notifications/subscriptions/acknowledged") {
          if (!message.params?.notifications?.taskIds?.includes(v.taskId)) {
            throw new ServerError("subscriptions/listen: the task was not acknowledged");
          }
          streamOpened(v);
        } else if (message?.method === "notifications/tasks") {
          if (!v.streaming || !isCurrent(v) || message.params?.taskId !== v.taskId) continue;
          // A stream that carried a change works: its next drop is reopened quickly again.
          if (++pushes > 1) v.streamDrops = 0;
          fold(v, message.params);
          transport("stream");
          render(v);
        } else if (message?.id === id) {
          const error = message.error;
          if (error) throw new ServerError(`subscriptions/listen: ${error.message}`, error.code);
          return "complete";
        }
      }
    }
  } finally {
    clearTimeout(idle);
    reader.cancel().catch(() => {});
  }
}

/** The acknowledgement: from now on the task is pushed, and the poller rests. */
function streamOpened(v) {
  v.streaming = true;
  v.failures = 0;
  v.again = false;
  clearTimeout(v.timer);
}

/** After a stream: done, polling for good, or polling until it is opened again. */
function streamEnded(v, end) {
  const wasStreaming = v.streaming;
  v.stream = null;
  v.streaming = false;
  // An ended task changes no more: nothing left to read.
  if (!isCurrent(v) || TERMINAL.has(v.status)) return;
  // The poller rests only while a stream is acknowledged; otherwise it is running already.
  if (wasStreaming) pollNow(v);
  if (end === "refused") {
    v.streamRefused = true;
    return;
  }
  v.streamDrops += 1;
  v.listenTimer = setTimeout(() => listen(v), Math.min(500 * 2 ** (v.streamDrops - 1), 8000));
}

/** Records what carried the last snapshot, "stream" or "poll" (the browser test reads it). */
function transport(kind) {
  $("task-view").dataset.transport = kind;
}

/* ------------------------------------------------------------------ fold */

const ENDING_TEXT = /^\[ending:([^\]]+)\]\s*([\s\S]*)$/;

/**
 * Folds one snapshot (a tasks/get answer, or a task pushed on the stream) into the view state;
 * out-of-order snapshots are dropped. Pushed ones keep the order: a stream sends each change
 * in commit order and opens with the task as it is, and while it is open the poller rests, a
 * poll answered after it opened is not folded, and pollNow sends no tasks/get.
 */
function fold(v, task) {
  const at = Date.parse(task.lastUpdatedAt);
  if (Number.isFinite(at)) {
    if (at < v.lastAppliedAt) return;
    v.lastAppliedAt = at;
  }
  v.status = task.status;
  v.pollIntervalMs = task.pollIntervalMs ?? v.pollIntervalMs;
  if (typeof task.statusMessage === "string") v.statusMessage = task.statusMessage;

  const meta = task._meta?.[STATUS_META];
  if (meta && typeof meta === "object") foldMeta(v, meta);
  foldFork(v, task);
  foldEnding(v, task);
}

/** The status meta: story, picture, phase, progress, actions, trail. */
function foldMeta(v, meta) {
  if (typeof meta.story === "string" && meta.story !== v.story) {
    v.story = meta.story;
    readManifest(meta.story).then(
      (manifest) => {
        if (!isCurrent(v)) return;
        v.manifest = manifest;
        render(v);
      },
      () => {},
    );
  }
  if (typeof meta.scene === "string") v.scene = meta.scene;
  v.sprite = typeof meta.sprite === "string" ? meta.sprite : null;
  if (typeof meta.phase === "string") v.phase = meta.phase;
  if (Number.isFinite(meta.progress)) v.progress = Math.max(0, Math.min(100, meta.progress));
  const actions = meta.actions;
  if (actions && typeof actions.key === "string" && Array.isArray(actions.options)) {
    if (v.actions?.key !== actions.key) v.lockedActionKey = null;
    v.actions = actions;
  } else {
    v.actions = null;
  }
  for (const entry of Array.isArray(meta.trail) ? meta.trail : []) {
    if (Number.isInteger(entry?.seq) && !v.journal.has(entry.seq)) v.journal.set(entry.seq, entry);
  }
}

/** The open fork (the input request whose key starts with `fork:`), with its deadline. */
function foldFork(v, task) {
  v.fork = null;
  if (task.status !== "input_required" || !task.inputRequests) return;
  for (const [key, request] of Object.entries(task.inputRequests)) {
    if (!key.startsWith("fork:")) continue;
    const params = request?.params ?? {};
    const forkMeta = params._meta?.[FORK_META] ?? {};
    const enumIds = params.requestedSchema?.properties?.choice?.enum ?? [];
    const options = Array.isArray(forkMeta.options)
      ? forkMeta.options
      : enumIds.map((id) => ({ id, label: id }));
    if (!v.forkFirstSeen.has(key)) v.forkFirstSeen.set(key, Date.parse(task.lastUpdatedAt));
    const timeoutMs = Number.isFinite(forkMeta.timeoutMs) ? forkMeta.timeoutMs : null;
    const firstSeen = v.forkFirstSeen.get(key);
    v.fork = {
      key,
      question: forkMeta.question ?? params.message ?? "What now?",
      options,
      timeoutMs,
      deadline: timeoutMs !== null && Number.isFinite(firstSeen) ? firstSeen + timeoutMs : null,
    };
    return;
  }
}

/** The ending: `[ending:<id>] <prose>`, a tool error, a failure, or abandoned. */
function foldEnding(v, task) {
  if (!TERMINAL.has(task.status)) {
    v.ending = null;
    return;
  }
  if (task.status === "cancelled") {
    v.ending = { kind: "abandoned", id: "abandoned", prose: "The story was abandoned." };
    return;
  }
  if (task.status === "failed") {
    const why = task.error?.message ?? task.statusMessage ?? "the task failed";
    v.ending = { kind: "failed", id: "failed", prose: why };
    return;
  }
  const text = (task.result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  if (task.result?.isError) {
    v.ending = { kind: "error", id: "error", prose: text || "the story could not be told" };
    return;
  }
  const match = ENDING_TEXT.exec(text);
  v.ending = match
    ? { kind: "ending", id: match[1], prose: match[2] }
    : { kind: "ending", id: "the end", prose: text };
}

/* ---------------------------------------------------------------- render */

const STATUS_WORDS = {
  working: "telling…",
  input_required: "your move",
  completed: "finished",
  failed: "failed",
  cancelled: "abandoned",
};

function render(v) {
  if (!isCurrent(v)) return;
  const title = v.manifest?.title ?? (v.story ? v.story : "A story");
  $("story-title").textContent = title;
  document.title = `${title} · Story demo`;
  if (v.error && !v.status) {
    $("beat").textContent = v.error;
    return;
  }
  if (v.status) setStatus(v.status, STATUS_WORDS[v.status] ?? v.status);
  renderStage(v);
  $("beat").textContent = beatText(v);
  renderPhases(v);
  renderProgress(v);
  renderJournal(v);
  renderFork(v);
  renderActions(v);
  renderEnding(v);
  $("abandon").hidden = TERMINAL.has(v.status);
  renderControls();
}

/**
 * The line under the picture: the status message while the story runs; once it is over,
 * the last beat of the journal (the ending's prose has a panel of its own).
 */
function beatText(v) {
  if (!TERMINAL.has(v.status)) return v.statusMessage || (v.status ? "" : "…");
  const seqs = [...v.journal.keys()].sort((a, b) => b - a);
  const last = seqs.map((seq) => v.journal.get(seq)).find((entry) => entry.kind === "beat");
  return last?.text ?? v.statusMessage ?? "";
}

/** The controls panel shows only when one of its buttons or its note does. */
function renderControls() {
  const shown = ["abandon", "restart", "controls-note"].some((id) => !$(id).hidden);
  $("controls").hidden = !shown;
}

/** The scene (cross-fading on change) and the sprite (fading in on its beat, out after). */
function renderStage(v) {
  const stage = $("scene");
  const sceneImg = $("scene-img");
  const spriteImg = $("sprite-img");
  const scene = v.scene ?? v.manifest?.defaultScene ?? null;
  if (scene && stage.dataset.scene !== scene) {
    stage.dataset.scene = scene;
    svgDataUrl(scene).then(
      (url) => {
        if (!isCurrent(v) || stage.dataset.scene !== scene) return;
        sceneImg.classList.remove("shown");
        // Restart the fade once the new picture has decoded.
        sceneImg.onload = () => requestAnimationFrame(() => sceneImg.classList.add("shown"));
        sceneImg.src = url;
        sceneImg.hidden = false;
        $("stage-empty").hidden = true;
      },
      () => {},
    );
  }
  const sprite = v.sprite;
  if (sprite) {
    if (spriteImg.dataset.uri !== sprite) {
      spriteImg.dataset.uri = sprite;
      svgDataUrl(sprite).then(
        (url) => {
          if (!isCurrent(v) || spriteImg.dataset.uri !== sprite) return;
          spriteImg.onload = () => requestAnimationFrame(() => spriteImg.classList.add("shown"));
          spriteImg.src = url;
        },
        () => {},
      );
    } else {
      spriteImg.classList.add("shown");
    }
  } else if (spriteImg.dataset.uri) {
    spriteImg.classList.remove("shown");
    spriteImg.dataset.uri = "";
  }
}

function renderPhases(v) {
  const list = $("phases");
  const phases = v.manifest?.phases ?? [];
  const current = phases.findIndex((p) => p.id === v.phase);
  list.replaceChildren(
    ...phases.map((phase, i) => {
      const state = i === current ? "current" : current >= 0 && i < current ? "past" : "future";
      const chip = el("li", { class: `chip ${state}`, "data-phase": phase.id }, phase.label);
      if (i === current) chip.setAttribute("aria-current", "step");
      return chip;
    }),
  );
}

function renderProgress(v) {
  const progress = v.ending?.kind === "ending" ? 100 : (v.progress ?? 0);
  $("progress-fill").style.width = `${progress}%`;
  $("progress").setAttribute("aria-valuenow", String(progress));
}

/** The journal: trail entries merged by seq, a marker where seq jumps, newest at the bottom. */
function renderJournal(v) {
  const list = $("journal");
  const seqs = [...v.journal.keys()].sort((a, b) => a - b);
  if (list.dataset.rendered === seqs.join(",")) return;
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  const items = [];
  let previous = null;
  for (const seq of seqs) {
    const entry = v.journal.get(seq);
    // seq counts from 1 over the whole walk, so a first entry above 1 follows unseen ones.
    const missed = seq - (previous ?? 0) - 1;
    if (missed > 0) {
      const earlier = previous === null ? " earlier" : "";
      items.push(el("li", { class: "gap" }, `… ${missed}${earlier} event${missed === 1 ? "" : "s"} not seen …`));
    }
    const kind = String(entry.kind ?? "beat");
    items.push(
      el(
        "li",
        { class: `entry kind-${kind}`, "data-kind": kind, "data-seq": String(seq) },
        el("span", { class: "entry-kind" }, kind),
        el("span", { class: "entry-text" }, String(entry.text ?? "")),
      ),
    );
    previous = seq;
  }
  if (items.length === 0) items.push(el("li", { class: "gap" }, "nothing yet"));
  list.replaceChildren(...items);
  list.dataset.rendered = seqs.join(",");
  if (nearBottom || list.dataset.scrolled !== "1") {
    list.scrollTop = list.scrollHeight;
    list.dataset.scrolled = "1";
  }
}

function renderFork(v) {
  const panel = $("fork");
  const fork = v.fork && !v.answeredForks.has(v.fork.key) ? v.fork : null;
  panel.hidden = !fork;
  if (!fork) {
    panel.dataset.key = "";
    return;
  }
  if (panel.dataset.key === fork.key) return;
  panel.dataset.key = fork.key;
  $("fork-question").textContent = fork.question;
  $("fork-note").hidden = true;
  $("fork-options").replaceChildren(
    ...fork.options.map((option) => {
      const button = el(
        "button",
        { type: "button", class: "button option", "data-testid": `fork-option-${option.id}`, id: `fork-option-${option.id}` },
        option.label ?? option.id,
      );
      button.addEventListener("click", () => answerFork(v, fork, option));
      return button;
    }),
  );
  $("countdown").hidden = fork.deadline === null;
  tickCountdown();
}

/** Redraws the countdown of the open timed fork (cosmetic: the server decides the timeout). */
function tickCountdown() {
  const v = view;
  const fork = v?.fork;
  if (!fork || fork.deadline === null || $("fork").hidden) return;
  const left = Math.max(0, fork.deadline - Date.now());
  $("countdown-fill").style.width = `${(100 * left) / fork.timeoutMs}%`;
  $("countdown-secs").textContent = `${Math.ceil(left / 1000)} s`;
  $("countdown").classList.toggle("urgent", left < 5000);
}
setInterval(tickCountdown, 100);

function renderActions(v) {
  const bar = $("actions");
  const actions = TERMINAL.has(v.status) ? null : v.actions;
  bar.hidden = !actions || actions.options.length === 0;
  if (!actions) return;
  const locked = v.lockedActionKey === actions.key;
  const buttons = $("action-buttons");
  if (buttons.dataset.key !== actions.key) {
    buttons.dataset.key = actions.key;
    buttons.replaceChildren(
      ...actions.options.map((option) => {
        const button = el(
          "button",
          { type: "button", class: "button action", "data-testid": `action-${option.id}`, id: `action-${option.id}` },
          option.label ?? option.id,
        );
        button.addEventListener("click", () => pressAction(v, actions.key, option));
        return button;
      }),
    );
  }
  for (const button of buttons.children) button.disabled = locked;
  bar.classList.toggle("locked", locked);
  $("actions-note").hidden = !locked;
  $("actions-note").textContent = locked ? "orders given — they take effect at the next check" : "";
}

function renderEnding(v) {
  const panel = $("ending");
  const ending = v.ending;
  panel.hidden = !ending;
  if (!ending) return;
  panel.dataset.kind = ending.kind;
  panel.dataset.ending = ending.id;
  const kicker = {
    ending: "The end",
    abandoned: "Abandoned",
    failed: "The task failed",
    error: "The story could not start",
  }[ending.kind];
  $("ending-kicker").textContent = kicker;
  $("ending-id").textContent = ending.kind === "ending" ? ending.id : ending.kind === "abandoned" ? "abandoned" : ending.id;
  $("ending-prose").textContent = ending.prose;
}

/* --------------------------------------------------------------- answers */

/** Answers the fork with `option`, then polls at once; reopens it if the server refused. */
async function answerFork(v, fork, option) {
  v.answeredForks.add(fork.key);
  render(v);
  try {
    await rpc("tasks/update", {
      taskId: v.taskId,
      inputResponses: { [fork.key]: { action: "accept", content: { choice: option.id } } },
    });
  } catch (error) {
    v.answeredForks.delete(fork.key);
    $("fork").dataset.key = "";
    render(v);
    $("fork-note").hidden = false;
    $("fork-note").textContent = `Not sent (${error.message}); try again.`;
  }
  pollNow(v);
}

/** Presses a standing action; the bar stays locked until a new actions key arrives. */
async function pressAction(v, key, option) {
  v.lockedActionKey = key;
  render(v);
  try {
    await rpc("tasks/update", {
      taskId: v.taskId,
      inputResponses: { [key]: { action: "accept", content: { action: option.id } } },
    });
  } catch (error) {
    v.lockedActionKey = null;
    render(v);
    $("actions-note").hidden = false;
    $("actions-note").textContent = `Not sent (${error.message}); try again.`;
  }
  pollNow(v);
}

async function abandon(v) {
  if (!confirm("Abandon this story? The task will be cancelled.")) return;
  $("abandon").disabled = true;
  try {
    await rpc("tasks/cancel", { taskId: v.taskId });
  } catch (error) {
    note("controls-note", `Could not abandon (${error.message}).`);
  } finally {
    $("abandon").disabled = false;
  }
  pollNow(v);
}

/** How long after a restart request the page polls fast and says the host is restarting. */
const RESTART_SETTLE_MS = 1500;
const RESTART_POLL_MS = 250;

/**
 * Asks the native host to restart (it answers 202, then exits; its supervisor starts it
 * again on the same port and state). Polls keep going through the gap, however long. The
 * stream, which the exit would cut anyway, is closed now and opened again once the restart
 * has settled: until then the poller tells how the restart goes.
 */
async function restartHost(v) {
  $("restart").disabled = true;
  note("controls-note", "");
  v.restartRequestedAt = Date.now();
  v.stream?.abort();
  setStatus("away", "host restarting…");
  try {
    await demoEndpoint("/demo/restart", "POST");
  } catch {
    // The host may already be gone mid-answer: keep polling either way.
  } finally {
    setTimeout(() => ($("restart").disabled = false), 3000);
  }
  schedulePoll(v, RESTART_POLL_MS);
}

/**
 * After a successful poll while a restart is pending: within the settle time, keep saying
 * "host restarting…" and poll fast (the gap may be shorter than a poll interval); after it,
 * say the story carried on. Returns the delay of the next poll.
 */
function settleRestart(v, next) {
  if (Date.now() - v.restartRequestedAt < RESTART_SETTLE_MS) {
    setStatus("away", "host restarting…");
    return next === null ? null : RESTART_POLL_MS;
  }
  v.restartRequestedAt = null;
  note("controls-note", "The host restarted; the story carried on.");
  setTimeout(() => isCurrent(v) && note("controls-note", ""), 6000);
  listen(v);
  return next;
}

/* ----------------------------------------------------------- task view */

function showTask(taskId) {
  showView("task-view");
  if (view) leaveTask(view);
  view = newView(taskId);
  const v = view;
  // A fresh view: reset what the renderers cached on the DOM.
  for (const id of ["scene", "sprite-img", "fork", "action-buttons", "journal"]) {
    delete $(id).dataset.scene;
    delete $(id).dataset.uri;
    delete $(id).dataset.key;
    delete $(id).dataset.rendered;
    delete $(id).dataset.scrolled;
  }
  $("scene-img").hidden = true;
  $("scene-img").classList.remove("shown");
  $("sprite-img").classList.remove("shown");
  $("stage-empty").hidden = false;
  $("journal").replaceChildren();
  $("phases").replaceChildren();
  $("beat").textContent = "…";
  $("story-title").textContent = "…";
  $("task-id").textContent = `task ${taskId.slice(0, 12)}${taskId.length > 12 ? "…" : ""}`;
  $("task-id").title = taskId;
  $("share-url").value = location.href;
  $("fork").hidden = true;
  $("actions").hidden = true;
  $("ending").hidden = true;
  $("abandon").hidden = false;
  $("abandon").onclick = () => abandon(v);
  $("restart").onclick = () => restartHost(v);
  $("restart").hidden = true;
  note("controls-note", "");
  loadHostInfo().then((info) => {
    if (!isCurrent(v)) return;
    $("restart").hidden = !info?.restart;
    renderControls();
  });
  setStatus("loading", "loading task…");
  delete $("task-view").dataset.transport;
  // The first tasks/get goes out with the listen: the task shows at once, and the page polls
  // on if the listen is refused or never acknowledged.
  poll(v);
  listen(v);
}

/** Stops what a task view runs: its poll, its stream and the stream's reopening. */
function leaveTask(v) {
  clearTimeout(v.timer);
  clearTimeout(v.listenTimer);
  v.stream?.abort();
}

/* ---------------------------------------------------------------- router */

const route = { generation: 0 };

function navigate(path) {
  history.pushState(null, "", path + location.search);
  routeTo();
}

function routeTo() {
  route.generation += 1;
  if (view) leaveTask(view);
  const match = /^\/task\/([^/]+)\/?$/.exec(location.pathname);
  if (match) {
    showTask(decodeURIComponent(match[1]));
  } else if (location.pathname === "/" || location.pathname === "") {
    view = null;
    homeGeneration = route.generation;
    loadHostInfo();
    showHome();
  } else {
    view = null;
    showView("missing-view");
    setStatus("idle", "");
  }
}

/* --------------------------------------------------------------- helpers */

function $(id) {
  return document.getElementById(id);
}

/** A new element with attributes and children (strings become text, never HTML). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function showView(id) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== id;
}

function setStatus(state, text) {
  const pill = $("status");
  pill.dataset.state = state;
  pill.textContent = text;
}

function note(id, text) {
  const node = $(id);
  node.hidden = !text;
  node.textContent = text;
  if (id === "controls-note") renderControls();
}

function wireStatic() {
  $("home-link").addEventListener("click", (event) => {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    navigate("/");
  });
  $("ending-home").addEventListener("click", (event) => {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    navigate("/");
  });
  $("copy-url").addEventListener("click", async () => {
    const input = $("share-url");
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select();
      document.execCommand?.("copy");
    }
    $("copy-url").textContent = "Copied";
    setTimeout(() => ($("copy-url").textContent = "Copy"), 1500);
  });
  $("share-url").addEventListener("focus", (event) => event.target.select());
  window.addEventListener("popstate", routeTo);
}

wireStatic();
routeTo();

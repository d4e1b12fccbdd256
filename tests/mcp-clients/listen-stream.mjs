// A small `subscriptions/listen` client (MCP 2026-07-28): one POST whose answer is an event
// stream, read as it arrives and parsed into JSON-RPC messages. The official client libraries
// the drivers use do not open a listen stream for tasks, so the drivers do it with this.
// With MCP_DRIVER_BEARER_TOKEN set, the POST carries `Authorization: Bearer <token>` (see
// bearer.mjs).

import { bearerFetch } from "./bearer.mjs";

/** The fetch of the listen POST: with the bearer token, if one is set. */
const httpFetch = bearerFetch();

/**
 * Posts `body` (a JSON-RPC request) to `url` with `headers` and yields each JSON-RPC message
 * of the answer as it arrives: every `data:` event of an event stream, or the one message of a
 * JSON answer (an error answered up front). `onOpen` is told the HTTP status and content type
 * first. Aborting `signal` ends the stream.
 */
export async function* listenMessages(url, body, { headers = {}, signal, onOpen } = {}) {
  const response = await httpFetch(url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(body),
    signal,
  });
  const type = response.headers.get("content-type") ?? "";
  onOpen?.(response.status, type);
  if (!type.includes("text/event-stream")) {
    const text = await response.text();
    yield JSON.parse(text);
    return;
  }
  yield* sseMessages(response.body);
}

/**
 * The JSON messages of an event stream (`body`, a stream of bytes), one per event that has
 * data, in order. Comments (`:` lines), `id:`, `event:` and `retry:` are skipped; an event left
 * unfinished when the stream ends is dropped, as the event-stream format says.
 */
export async function* sseMessages(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const boundary = /\r?\n\r?\n/.exec(buffer);
      if (boundary === null) break;
      const event = buffer.slice(0, boundary.index);
      buffer = buffer.slice(boundary.index + boundary[0].length);
      const data = eventData(event);
      if (data !== "") yield JSON.parse(data);
    }
  }
}

/** The data of one event: its `data:` lines joined with newlines. */
function eventData(event) {
  return event
    .split(/\r?\n/)
    .filter((line) => line === "data" || line.startsWith("data:"))
    .map((line) => {
      const value = line.slice(5);
      return value.startsWith(" ") ? value.slice(1) : value;
    })
    .join("\n");
}

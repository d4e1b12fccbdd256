// The JavaScript floor of `cargo xtask bench worker`: a Worker that calls a SQLite Durable
// Object through RPC and does nothing else.
//
// - `GET /ping/<name>`: `ping()` on the object `<name>`, which returns at once.
// - `POST /insert/<name>`: `insert(body)` with the request's body (about 120 bytes of text):
//   the object inserts it as one row, one statement.

import { DurableObject } from "cloudflare:workers";

export class JsFloor extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    );
  }

  ping() {}

  insert(body) {
    this.ctx.storage.sql.exec("INSERT INTO rows (body) VALUES (?)", body);
  }
}

export default {
  async fetch(request, env) {
    const [, route, name, ...rest] = new URL(request.url).pathname.split("/");
    if (!name || rest.length > 0) {
      return new Response("not found", { status: 404 });
    }
    if (route === "ping" && request.method === "GET") {
      await env.FLOOR.getByName(name).ping();
      return new Response("");
    }
    if (route === "insert" && request.method === "POST") {
      await env.FLOOR.getByName(name).insert(await request.text());
      return new Response("");
    }
    return new Response("not found", { status: 404 });
  },
};

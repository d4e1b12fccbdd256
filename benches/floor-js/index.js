// The JavaScript floor of `cargo xtask bench worker`, and of its cold start (`cargo xtask bench
// cold`): a Worker that calls a SQLite Durable Object through RPC and does nothing else.
//
// - `GET /ping/<name>`: `ping()` on the object `<name>`, which returns at once.
// - `POST /insert/<name>`: `insert(body)` with the request's body (about 120 bytes of text):
//   the object inserts it as one row, one statement.
// - `GET /read/<name>`: `read()` on the object `<name>`, which answers the body of the row
//   inserted last (empty if none): with a first insert, what a cold start's first create and
//   first get of a task stand against.

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

  read() {
    const last = this.ctx.storage.sql
      .exec("SELECT body FROM rows ORDER BY id DESC LIMIT 1")
      .toArray();
    return last.length > 0 ? last[0].body : "";
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
    if (route === "read" && request.method === "GET") {
      return new Response(await env.FLOOR.getByName(name).read());
    }
    return new Response("not found", { status: 404 });
  },
};

// The bearer token the Node drivers send, for a server whose MCP endpoint sits behind an
// application's own bearer-token middleware: with MCP_DRIVER_BEARER_TOKEN set, every HTTP
// request a driver makes carries `Authorization: Bearer <token>`; unset (or empty), nothing
// changes. Every fetch path of the drivers goes through `bearerFetch`: the SDK transports (as
// their `fetch` option), the drivers' own POSTs and the listen streams. The token is never
// printed.

const TOKEN = process.env.MCP_DRIVER_BEARER_TOKEN || undefined;

/**
 * `fetchImpl` (the global fetch by default), with `Authorization: Bearer <token>` set on the
 * headers of each request when MCP_DRIVER_BEARER_TOKEN is set; `fetchImpl` itself when not.
 */
export function bearerFetch(fetchImpl = fetch) {
  if (TOKEN === undefined) return fetchImpl;
  return (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set("Authorization", `Bearer ${TOKEN}`);
    return fetchImpl(input, { ...init, headers });
  };
}

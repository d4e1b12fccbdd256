// A real OAuth 2.1 authorization server (oidc-provider) for the MCP authorization tests.
//
// Usage: node authorization-server.mjs [--port N] [--resource URL]... [--scopes "a b"]
//                                      [--key-file PATH] [--token-ttl SECONDS]
//        node authorization-server.mjs --new-key-file PATH
//
//   --port          port to listen on, on 127.0.0.1 (default 0: a free port)
//   --resource      a resource (RFC 8707) it issues tokens for; repeatable. Without any,
//                   every http resource on 127.0.0.1 or localhost is accepted.
//   --scopes        the scopes a resource may be granted (default "mcp:tasks"); a token
//                   carries those of them that the authorization request asked for, or the
//                   first of them when it asked for none
//   --key-file      a JWK set (or one JWK) holding the RSA private key to sign with; without
//                   it a key is generated at start. Restarting with another file rotates keys.
//   --token-ttl     access token lifetime in seconds (default 3600)
//   --new-key-file  writes a fresh RSA private JWK set to PATH and exits (for key rotation)
//
// Once listening it prints exactly one line on stdout, `issuer http://127.0.0.1:<port>`, and
// runs until killed. oidc-provider's own notices go to stderr.
//
// What it serves (oidc-provider's routes, plus one alias):
//   GET  /.well-known/oauth-authorization-server   RFC 8414 metadata (same document as below)
//   GET  /.well-known/openid-configuration         OpenID discovery
//   GET  /jwks                                     the public signing keys (jwks_uri)
//   POST /reg                                      dynamic client registration (RFC 7591)
//   GET  /auth, POST /token                        authorization code + PKCE (S256 only)
//
// Access tokens are JWTs (RFC 9068: header typ "at+jwt", RS256) with iss, sub (the login
// name), aud (the resource), client_id, scope, iat, exp, jti. A refresh token is issued to
// clients registered with the refresh_token grant.
//
// Logging in and consenting without a browser (oidc-provider's devInteractions), with one
// cookie jar kept across these requests:
//   1. GET the authorization URL (/auth?...)       -> 303, Location /interaction/<uid>
//   2. GET /interaction/<uid>                      -> 200, the login form (optional)
//   3. POST /interaction/<uid>, form body
//      prompt=login&login=<user name>              -> 303 to /auth/<uid> (resume)
//   4. GET /auth/<uid>                             -> 303 to /interaction/<uid2> (consent)
//   5. POST /interaction/<uid2>, prompt=consent    -> 303 to /auth/<uid2>
//   6. GET /auth/<uid2>                            -> 303 to <redirect_uri>?code=...&iss=...
// Any user name is accepted, with no password: accounts exist by being named.

import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

// oidc-provider prints its "you SHOULD change this default" notices with console.info; stdout
// is reserved for the issuer line a test waits for.
console.info = console.error;
console.log = console.error;

const { default: Provider, errors } = await import("oidc-provider");

const { values: options } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    resource: { type: "string", multiple: true, default: [] },
    scopes: { type: "string", default: "mcp:tasks" },
    "key-file": { type: "string" },
    "token-ttl": { type: "string", default: "3600" },
    "new-key-file": { type: "string" },
  },
});

function newSigningKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg: "RS256", use: "sig" };
}

if (options["new-key-file"]) {
  writeFileSync(options["new-key-file"], `${JSON.stringify({ keys: [newSigningKey()] }, null, 2)}\n`);
  process.exit(0);
}

function loadKeys(path) {
  const parsed = JSON.parse(readFileSync(path, "utf8"));
  return Array.isArray(parsed.keys) ? parsed.keys : [parsed];
}

const keys = options["key-file"] ? loadKeys(options["key-file"]) : [newSigningKey()];
const resources = options.resource.map((resource) => new URL(resource).href);
const offeredScopes = options.scopes.split(/\s+/).filter(Boolean);
const tokenTtl = Number(options["token-ttl"]);

/** Whether tokens may name `resource` as their audience. */
function resourceAllowed(resource) {
  if (resources.length > 0) return resources.includes(resource);
  // With no --resource the server stays usable for any fixture on this machine, and for
  // nothing else.
  const url = URL.parse(resource);
  return url?.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}

// The issuer needs the port, which is known only once listening: listen first, answer after.
const server = createServer();
await new Promise((resolve, reject) => {
  server.once("error", reject);
  server.listen(Number(options.port), "127.0.0.1", resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  // Accounts exist by being named: the login name is the subject.
  findAccount: async (_ctx, accountId) => ({
    accountId,
    claims: async () => ({ sub: accountId }),
  }),
  // The resource's scopes are listed here too: clients register with the scope they mean to
  // ask for, and oidc-provider refuses a registration naming scopes it does not know.
  scopes: ["openid", "offline_access", ...offeredScopes],
  // The code flow only: no implicit or hybrid responses.
  responseTypes: ["code"],
  // MCP clients register as public clients (PKCE, no secret) for the code grant.
  clientDefaults: {
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  },
  pkce: { required: () => true },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  ttl: {
    AccessToken: tokenTtl,
    AuthorizationCode: 120,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 86_400,
    Session: 3600,
  },
  features: {
    devInteractions: { enabled: true },
    // Bearer tokens only, which is what the MCP server accepts.
    dPoP: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets the one configured, when there is only one.
      defaultResource: async (_ctx, _client, oneOf) => oneOf?.[0] ?? (resources.length === 1 ? resources[0] : undefined),
      // A token request without `resource` gets the resource the authorization granted.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!resourceAllowed(resource)) {
          throw new errors.InvalidTarget(`this server issues no tokens for ${resource}`);
        }
        return {
          scope: offeredScopes.join(" "),
          audience: resource,
          accessTokenTTL: tokenTtl,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
});

const handle = provider.callback();
server.on("request", (req, res) => {
  // oidc-provider serves its metadata only at the OpenID path; MCP clients try RFC 8414's
  // first, so serve the same document there too.
  const url = new URL(req.url, issuer);
  if (url.pathname === "/.well-known/oauth-authorization-server") {
    url.pathname = "/.well-known/openid-configuration";
  }
  // A client that asks for no scope (an MCP server that names none in its challenge or
  // metadata) gets the default one, as RFC 6749 §3.3 lets a server do: oidc-provider would
  // otherwise deny a request that grants nothing.
  if (url.pathname === "/auth" && !url.searchParams.get("scope") && offeredScopes.length > 0) {
    url.searchParams.set("scope", offeredScopes[0]);
  }
  req.url = `${url.pathname}${url.search}`;
  handle(req, res);
});

process.stdout.write(`issuer ${issuer}\n`);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));

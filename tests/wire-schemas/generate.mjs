// Writes the upstream JSON Schemas that the black-box suite (tests/tests/blackbox/schema.rs)
// validates wire messages against, into the folder named by the one argument:
//
//   mcp-2026-07-28.schema.json  the core revision 2026-07-28
//   ext-tasks.schema.json       the Tasks extension (io.modelcontextprotocol/tasks)
//   mcp-2025-11-25.schema.json  the revision 2025-11-25, with its experimental tasks
//
// Each is {"$defs": {TypeName: schema, ...}} (draft 2020-12), every "$ref" naming a
// "#/$defs/TypeName" of the same file. Usage, after `npm ci` here:
//
//   node tests/wire-schemas/generate.mjs target/wire-schemas
//
// The sources, pinned by package-lock.json:
//
// - The two core revisions are the official MCP schema.json files, as bundled by
//   @modelcontextprotocol/conformance (the suite `cargo xtask clients` runs, same version) to
//   check servers with. Its bundle is one minified script that exports nothing, so the
//   schemas are read out of its syntax tree: the object that maps each revision to its schema
//   literal. The SDK's zod schemas (@modelcontextprotocol/core) lack most 2026-07-28 wire
//   types (InputRequiredResult, the -3202x errors, the JSON-RPC responses per result), so
//   they cannot stand in.
// - The Tasks extension has no JSON Schema in a package: its wire types are the zod schemas
//   of @modelcontextprotocol/ext-tasks (core/v2), converted with zod's toJSONSchema.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import * as acorn from "acorn";
import * as tasks from "@modelcontextprotocol/ext-tasks/core/v2";
import { z } from "zod";

const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";

const CONFORMANCE = "@modelcontextprotocol/conformance";
const EXT_TASKS = "@modelcontextprotocol/ext-tasks";

/** The files written: name, and how its $defs are made. */
const FILES = [
  ["mcp-2026-07-28.schema.json", () => coreRevision("2026-07-28")],
  ["ext-tasks.schema.json", tasksExtension],
  ["mcp-2025-11-25.schema.json", () => coreRevision("2025-11-25")],
];

function main() {
  const [out, ...rest] = process.argv.slice(2);
  if (out === undefined || rest.length > 0) {
    fail("usage: node tests/wire-schemas/generate.mjs <output folder>");
  }
  mkdirSync(out, { recursive: true });
  for (const [file, make] of FILES) {
    const { source, defs } = make();
    checkRefs(file, defs);
    const document = { $schema: DRAFT_2020_12, $comment: `generated from ${source}`, $defs: defs };
    writeFileSync(join(out, file), `${JSON.stringify(document, null, 2)}\n`);
    console.log(`wire-schemas: ${join(out, file)}: ${Object.keys(defs).length} types from ${source}`);
  }
}

/** The installed version of `name`, as `name@version`. */
function pinned(name) {
  const manifest = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return `${name}@${JSON.parse(readFileSync(manifest, "utf8")).version}`;
}

// ---- the core revisions, from the conformance suite's bundle ----

let revisions;

/** The $defs of the official schema of `revision`. */
function coreRevision(revision) {
  revisions ??= bundledRevisions();
  const schema = revisions.get(revision);
  if (schema?.$schema !== DRAFT_2020_12 || typeof schema.$defs !== "object") {
    fail(
      `${pinned(CONFORMANCE)} bundles no draft 2020-12 schema of ${revision} ` +
        `(it has: ${[...revisions.keys()].join(", ")}); pin a version that does`,
    );
  }
  return { source: pinned(CONFORMANCE), defs: schema.$defs };
}

/**
 * The schemas the conformance bundle holds, by revision: found through the one module-level
 * object whose keys are all revisions (`"2025-11-25"`, or a constant holding one) and whose
 * values are all constants holding a schema literal.
 */
function bundledRevisions() {
  const bundle = createRequire(import.meta.url).resolve(`${CONFORMANCE}/dist/index.js`);
  const program = acorn.parse(readFileSync(bundle, "utf8"), {
    ecmaVersion: "latest",
    sourceType: "module",
    allowHashBang: true,
  });
  const constants = moduleConstants(program);
  const json = (node) => literal(node, constants);
  const isRevision = (key) => typeof key === "string" && /^\d{4}-\d{2}-\d{2}$/.test(key);
  const maps = [...constants.values()].filter(
    (node) =>
      node?.type === "ObjectExpression" &&
      node.properties.length > 0 &&
      node.properties.every(
        (property) =>
          property.type === "Property" &&
          isRevision(propertyKey(property, constants)) &&
          property.value.type === "Identifier" &&
          constants.get(property.value.name)?.type === "ObjectExpression",
      ),
  );
  if (maps.length !== 1) {
    fail(
      `expected one map of revisions to schemas in ${pinned(CONFORMANCE)}, found ${maps.length}: ` +
        "its bundle changed shape; adapt bundledRevisions() in tests/wire-schemas/generate.mjs",
    );
  }
  return new Map(
    maps[0].properties.map((property) => [propertyKey(property, constants), json(property.value)]),
  );
}

/** The module's top-level `const`/`let`/`var` bindings, by name (their initialisers). */
function moduleConstants(program) {
  const constants = new Map();
  for (const statement of program.body) {
    const declaration =
      statement.type === "ExportNamedDeclaration" ? statement.declaration : statement;
    if (declaration?.type !== "VariableDeclaration") continue;
    for (const { id, init } of declaration.declarations) {
      if (id.type === "Identifier" && init) constants.set(id.name, init);
    }
  }
  return constants;
}

/** The key of an object literal's property: a name, a string, or `[CONSTANT]`. */
function propertyKey(property, constants) {
  if (!property.computed) {
    return property.key.type === "Identifier" ? property.key.name : String(property.key.value);
  }
  return literal(property.key, constants);
}

/**
 * The JSON value a literal expression of the bundle denotes. Only what a minifier makes of
 * a JSON document is accepted (objects, arrays, strings, template strings without
 * substitutions, numbers, `!0`/`!1`, constants holding such values); anything else fails, so
 * the schema is never half-read.
 */
function literal(node, constants) {
  const value = (inner) => literal(inner, constants);
  switch (node.type) {
    case "ObjectExpression":
      return Object.fromEntries(
        node.properties.map((property) => {
          if (property.type !== "Property" || property.kind !== "init" || property.method) {
            notLiteral(node);
          }
          return [propertyKey(property, constants), value(property.value)];
        }),
      );
    case "ArrayExpression":
      return node.elements.map((element) => (element ? value(element) : notLiteral(node)));
    case "Literal":
      return node.regex || node.bigint ? notLiteral(node) : node.value;
    case "TemplateLiteral":
      return node.expressions.length === 0 ? node.quasis[0].value.cooked : notLiteral(node);
    case "UnaryExpression": {
      const operand = value(node.argument);
      if (node.operator === "!" && typeof operand === "number") return !operand;
      if (node.operator === "-" && typeof operand === "number") return -operand;
      return notLiteral(node);
    }
    case "Identifier":
      return constants.has(node.name) ? value(constants.get(node.name)) : notLiteral(node);
    default:
      return notLiteral(node);
  }
}

function notLiteral(node) {
  fail(
    `${pinned(CONFORMANCE)}: a schema holds a ${node.type} at offset ${node.start}, not JSON; ` +
      "adapt literal() in tests/wire-schemas/generate.mjs",
  );
}

// ---- the Tasks extension, from ext-tasks' zod schemas ----

/**
 * The extension's types. Each export `<Name>V2Schema` of ext-tasks/core/v2 is the extension's
 * `<Name>`: CreateTaskResultV2Schema is CreateTaskResult, GetTaskResultV2Schema GetTaskResult,
 * UpdateTaskResultV2Schema UpdateTaskResult, CancelTaskResultV2Schema CancelTaskResult. All are
 * registered, so each type the others use is a `$ref` to its own entry.
 *
 * `io: "input"` describes what ext-tasks accepts when it parses a message. The output side
 * would close every plain `z.object` with `additionalProperties: false` (zod strips unknown
 * keys there), which makes an intersection such as GetTaskResult (DetailedTask and
 * `{resultType, _meta}`) refuse every task. Types that ext-tasks checks in code (`openObject`,
 * a transform; `_meta`, a custom check) cannot be expressed and become `{}`: they accept any
 * value.
 */
function tasksExtension() {
  const registry = z.registry();
  for (const [name, schema] of Object.entries(tasks)) {
    if (name.endsWith("V2Schema")) registry.add(schema, { id: name.slice(0, -"V2Schema".length) });
  }
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io: "input",
    unrepresentable: "any",
    cycles: "ref",
    uri: (id) => `#/$defs/${id}`,
  });
  // Each entry is a document of its own; inside one file's $defs they are plain definitions.
  const defs = Object.fromEntries(
    Object.entries(schemas).map(([name, { $schema, $id, ...schema }]) => [name, schema]),
  );
  return { source: pinned(EXT_TASKS), defs };
}

// ---- checks ----

/** Fails unless every `$ref` in `defs` names one of them, so each file stands alone. */
function checkRefs(file, defs) {
  const dangling = new Set();
  const visit = (value) => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== "object") return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string") {
        const name = inner.startsWith("#/$defs/") ? inner.slice("#/$defs/".length) : null;
        if (name === null || !Object.hasOwn(defs, name)) dangling.add(inner);
      } else {
        visit(inner);
      }
    }
  };
  visit(defs);
  if (dangling.size > 0) {
    fail(`${file}: $refs that name no type of the file: ${[...dangling].join(", ")}`);
  }
}

function fail(message) {
  console.error(`wire-schemas: ${message}`);
  process.exit(1);
}

main();

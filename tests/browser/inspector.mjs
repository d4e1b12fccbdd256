// Headless-browser test of the task inspector's page, against a running story-demo host (the
// native binary or the Worker) started with the inspector's token.
//
//   BASE_URL=http://127.0.0.1:PORT TOKEN=... INSPECTOR_PATH=/__durable-mcp/inspector \
//     SCREENSHOT=out.png node inspector.mjs
//
// Starts the `fixture` story on the demo page and leaves it at its first fork; then, on the
// inspector's page: a wrong token is refused; the right one lists tasks; the status filter
// finds the story waiting for input; its detail shows the journal and the open question; the
// screenshot is taken; the question is answered from the page and the detail follows the task
// on by itself, pushed over the inspector's event stream of the task. Prints one summary line;
// exits non-zero with the failed step on any failure.

// Chromium and the steps: see harness.mjs.

import { WAIT_MS, check, runTest } from "./harness.mjs";

const BASE_URL = (process.env.BASE_URL ?? "").replace(/\/+$/, "");
const TOKEN = process.env.TOKEN ?? "";
const INSPECTOR_PATH = process.env.INSPECTOR_PATH ?? "";
const SCREENSHOT = process.env.SCREENSHOT ?? "";

if (!/^https?:\/\/[^/]+$/.test(BASE_URL) || !TOKEN || !INSPECTOR_PATH.startsWith("/") || !SCREENSHOT) {
  console.error(
    "usage: BASE_URL=http://127.0.0.1:PORT TOKEN=<token> INSPECTOR_PATH=/... SCREENSHOT=<file.png> node inspector.mjs",
  );
  process.exit(2);
}

/** An answer the request's schema accepts: each field's first choice, or a plain value. */
function answerFor(request) {
  const properties = request?.requestedSchema?.properties ?? {};
  const content = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (Array.isArray(schema.enum) && schema.enum.length > 0) content[name] = schema.enum[0];
    else if (Array.isArray(schema.oneOf) && schema.oneOf.length > 0) content[name] = schema.oneOf[0].const;
    else if (schema.type === "boolean") content[name] = true;
    else if (schema.type === "number" || schema.type === "integer") content[name] = 1;
    else content[name] = "inspector";
  }
  return { action: "accept", content };
}

async function main({ browser, at, watch }) {
  const started = Date.now();
  const demo = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  demo.setDefaultTimeout(WAIT_MS);

  const taskId = await at("start a story and leave it at its fork", async () => {
    await demo.goto(`${BASE_URL}/`);
    const card = demo.getByTestId("story-fixture");
    await card.waitFor({ state: "visible" });
    await card.getByTestId("name").fill("Ivy");
    await card.getByTestId("start").click();
    await demo.waitForURL(/\/task\/[^/?#]+$/);
    await demo.getByTestId("fork").waitFor({ state: "visible" });
    return decodeURIComponent(new URL(demo.url()).pathname.slice("/task/".length));
  });

  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(WAIT_MS);
  watch(page);
  const message = page.locator("#message");

  await at("open the inspector", async () => {
    await page.goto(`${BASE_URL}${INSPECTOR_PATH}`);
    await page.locator("#token").waitFor({ state: "visible" });
  });

  await at("a wrong token is refused", async () => {
    await page.locator("#token").fill("not-the-inspector-token");
    await page.getByRole("button", { name: "Use token" }).click();
    await page.waitForFunction(() => document.querySelector("#message")?.className === "error");
    const text = (await message.textContent()) ?? "";
    check(text.includes("Bearer"), `the refusal says ${JSON.stringify(text)}`);
    check((await page.locator("#tasks tr").count()) === 0, "tasks are shown without the token");
  });

  await at("the token lists the tasks", async () => {
    await page.locator("#token").fill(TOKEN);
    await page.getByRole("button", { name: "Use token" }).click();
    await page.locator(`#tasks tr[data-task-id="${taskId}"]`).waitFor({ state: "visible" });
  });

  await at("the status filter finds the story waiting for input", async () => {
    await page.locator("#status").selectOption("input_required");
    await page.getByRole("button", { name: "List" }).click();
    await page.locator(`#tasks tr[data-task-id="${taskId}"]`).waitFor({ state: "visible" });
    const statuses = await page.locator("#tasks td.status").allTextContents();
    check(statuses.length > 0 && statuses.every((s) => s === "input_required"), `statuses listed: ${statuses}`);
  });

  const request = await at("the task's detail shows its journal and question", async () => {
    await page.locator(`#tasks tr[data-task-id="${taskId}"]`).click();
    await page.locator("#detail form.answer").waitFor({ state: "visible" });
    const status = await page.locator("#detail dd.status").textContent();
    check(status === "input_required", `the detail says status ${status}`);
    const text = (await page.locator("#detail").textContent()) ?? "";
    for (const heading of ["Journal", "Input requests", "History"]) {
      check(text.includes(heading), `the detail lacks ${heading}`);
    }
    const request = JSON.parse((await page.locator("#detail form.answer").locator("xpath=preceding-sibling::pre[1]").textContent()) ?? "null");
    check(request?.requestedSchema, `the question shown is no elicitation: ${JSON.stringify(request)}`);
    return request;
  });

  await at("save the screenshot", async () => {
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  await at("answer the question from the page", async () => {
    await page.locator("#detail form.answer textarea").fill(JSON.stringify(answerFor(request)));
    await page.getByRole("button", { name: "Answer" }).click();
    await page.waitForFunction(() => document.querySelector("#message")?.textContent === "answer: done");
  });

  const finalStatus = await at("the detail follows the task past the question by itself, pushed", async () => {
    // No click: the page follows the task it shows, over the host's event stream.
    await page.waitForFunction(() => {
      const detail = document.querySelector("#detail");
      const status = detail?.querySelector("dd.status")?.textContent;
      return /input ".*" answered/.test(detail?.textContent ?? "") && status !== "input_required";
    });
    const transport = await page.locator("#detail").getAttribute("data-transport");
    check(transport === "stream", `the detail was refreshed by ${transport}, not by the stream`);
    return page.locator("#detail dd.status").textContent();
  });

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  return (
    `ok inspector ${BASE_URL}: task ${taskId} found waiting, answered from the page, now ${finalStatus}; ` +
      `screenshot ${SCREENSHOT} (${seconds} s)`
  );
}

await runTest("inspector", BASE_URL, main);

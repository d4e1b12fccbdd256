// Headless-browser test of the story-demo page (examples/story-demo/web), against a running
// story-demo host: the native binary or the Worker, whichever serves BASE_URL.
//
//   BASE_URL=http://127.0.0.1:PORT SCREENSHOT=out.png node story-demo.mjs
//
// Opens `/`, starts the `fixture` story as "Tess", presses the standing action `read-map`
// while the `trailhead` fork is open, answers `ridge`, waits for the ending, checks the
// journal (the fork answer, the side story's beat) and the `/task/<id>` URL, reloads and
// checks the ending is shown again (resumed from the URL alone), and saves a full-page
// screenshot. Prints one summary line; exits non-zero with the failed step on any failure.
//
// Chromium: `/usr/bin/chromium` (or $CHROMIUM), driven through playwright-core; `launch`
// gives every run a fresh temporary profile (user-data-dir) of its own.

import { chromium } from "playwright-core";

const BASE_URL = (process.env.BASE_URL ?? "").replace(/\/+$/, "");
const SCREENSHOT = process.env.SCREENSHOT ?? "";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
/** The longest any one wait may take. */
const WAIT_MS = 30_000;
/** The longest the whole run may take. */
const RUN_MS = 180_000;
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const NAME = "Tess";
const FORK_QUESTION = "High ridge or the wash itself?";
const SIDE_STORY_BEAT = `${NAME} unfolds the map against the wind.`;
const ENDINGS = ["home", "dry"];

if (!/^https?:\/\/[^/]+$/.test(BASE_URL) || !SCREENSHOT) {
  console.error("usage: BASE_URL=http://127.0.0.1:PORT SCREENSHOT=<file.png> node story-demo.mjs");
  process.exit(2);
}

let step = "launch";
let browser;
const pageErrors = [];

setTimeout(() => {
  console.error(`FAIL story-demo ${BASE_URL}: still running after ${RUN_MS} ms (at step: ${step})`);
  process.exit(1);
}, RUN_MS).unref();

/** Runs one named step; a failure names it. */
async function at(name, action) {
  step = name;
  return action();
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function main() {
  const started = Date.now();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(WAIT_MS);
  page.on("pageerror", (error) => pageErrors.push(error.message));
  const byId = (id) => page.getByTestId(id);

  await at("open the home page", async () => {
    await page.goto(`${BASE_URL}/`);
  });

  const card = byId("story-fixture");
  await at("start the fixture story as Tess", async () => {
    await card.waitFor({ state: "visible" });
    await card.getByTestId("name").fill(NAME);
    await card.getByTestId("start").click();
  });

  const taskId = await at("reach the task view at /task/<id>", async () => {
    await page.waitForURL(/\/task\/[^/?#]+$/);
    return decodeURIComponent(new URL(page.url()).pathname.slice("/task/".length));
  });

  await at("see the trailhead fork", async () => {
    const fork = byId("fork");
    await fork.waitFor({ state: "visible" });
    const question = (await fork.textContent()) ?? "";
    check(question.includes(FORK_QUESTION), `the fork panel says ${JSON.stringify(question)}, not the question ${JSON.stringify(FORK_QUESTION)}`);
    await byId("fork-option-ridge").waitFor({ state: "visible" });
    await byId("fork-option-wash").waitFor({ state: "visible" });
  });

  await at("press the standing action read-map before answering", async () => {
    const action = byId("action-read-map");
    await action.waitFor({ state: "visible" });
    await action.click();
    // The bar locks until the server offers the actions again under a new key.
    await page.waitForFunction(
      () => document.querySelector('[data-testid="action-read-map"]')?.disabled === true || !document.querySelector('[data-testid="action-read-map"]'),
      null,
      { timeout: WAIT_MS },
    );
  });

  await at("answer the fork with ridge", async () => {
    await byId("fork-option-ridge").click();
  });

  const ending = byId("ending");
  const endingText = await at("see the ending", async () => {
    await ending.waitFor({ state: "visible" });
    return ((await ending.textContent()) ?? "").replace(/\s+/g, " ").trim();
  });
  const endingId = await ending.getAttribute("data-ending");
  await at("check the ending", async () => {
    check(ENDINGS.includes(endingId), `the ending is ${JSON.stringify(endingId)}, expected one of ${ENDINGS.join(", ")} (panel: ${JSON.stringify(endingText)})`);
    check(endingText.includes(NAME), `the ending does not name ${NAME}: ${JSON.stringify(endingText)}`);
  });

  const journal = byId("journal");
  const entries = await at("check the journal", async () => {
    const text = (await journal.textContent()) ?? "";
    check(text.includes(SIDE_STORY_BEAT), `the journal lacks the side story's beat ${JSON.stringify(SIDE_STORY_BEAT)}:\n${text}`);
    const answers = await journal.locator('[data-kind="answer"]').allTextContents();
    check(
      answers.some((answer) => /ridge/i.test(answer)),
      `the journal shows no answer naming the ridge (answer entries: ${JSON.stringify(answers)}):\n${text}`,
    );
    return journal.locator("[data-seq]").count();
  });

  await at("check the URL", async () => {
    const path = new URL(page.url()).pathname;
    check(path === `/task/${encodeURIComponent(taskId)}`, `the page is at ${path}, not /task/${taskId}`);
  });

  await at("reload and see the ending again", async () => {
    await page.reload();
    await ending.waitFor({ state: "visible" });
    const again = ((await ending.textContent()) ?? "").replace(/\s+/g, " ").trim();
    check(again === endingText, `after a reload the ending says ${JSON.stringify(again)}, before ${JSON.stringify(endingText)}`);
    const text = (await journal.textContent()) ?? "";
    check(text.includes(SIDE_STORY_BEAT), `after a reload the journal lacks ${JSON.stringify(SIDE_STORY_BEAT)}`);
  });

  await at("save the screenshot", async () => {
    // Let the scene's fade-in finish.
    await page.waitForTimeout(1000);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  check(pageErrors.length === 0, `the page threw: ${pageErrors.join("; ")}`);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `ok story-demo ${BASE_URL}: task ${taskId} ended "${endingId}", ${entries} journal entries, ` +
      `resumed after reload, screenshot ${SCREENSHOT} (${seconds} s)`,
  );
}

try {
  await main();
  await browser.close();
  process.exit(0);
} catch (error) {
  const message = String(error?.message ?? error).split("\n").slice(0, 12).join("\n");
  console.error(`FAIL story-demo ${BASE_URL}: ${step}: ${message}`);
  if (pageErrors.length > 0) console.error(`page errors: ${pageErrors.join("; ")}`);
  await browser?.close().catch(() => {});
  process.exit(1);
}

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
// Chromium and the steps: see harness.mjs.

import { WAIT_MS, check, runTest } from "./harness.mjs";

const BASE_URL = (process.env.BASE_URL ?? "").replace(/\/+$/, "");
const SCREENSHOT = process.env.SCREENSHOT ?? "";

const NAME = "Tess";
const FORK_QUESTION = "High ridge or the wash itself?";
const SIDE_STORY_BEAT = `${NAME} unfolds the map against the wind.`;
const ENDINGS = ["home", "dry"];

if (!/^https?:\/\/[^/]+$/.test(BASE_URL) || !SCREENSHOT) {
  console.error("usage: BASE_URL=http://127.0.0.1:PORT SCREENSHOT=<file.png> node story-demo.mjs");
  process.exit(2);
}

async function main({ browser, at, watch }) {
  const started = Date.now();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(WAIT_MS);
  watch(page);
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

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  return (
    `ok story-demo ${BASE_URL}: task ${taskId} ended "${endingId}", ${entries} journal entries, ` +
      `resumed after reload, screenshot ${SCREENSHOT} (${seconds} s)`
  );
}

await runTest("story-demo", BASE_URL, main);

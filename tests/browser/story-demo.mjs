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
// The page follows the task over a subscriptions/listen stream: the test checks that the
// fork and the ending reached it pushed (`data-transport="stream"` on the task view) and that
// it sent no tasks/get from the answer to the ending. Where the host can restart (natively),
// it presses Restart the host at the fork and checks the page opened its stream again.
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
  // The MCP requests the page sent, by method (its `Mcp-Method` header).
  const sent = new Map();
  page.on("request", (request) => {
    const method = request.headers()["mcp-method"];
    if (method) sent.set(method, (sent.get(method) ?? 0) + 1);
  });
  const count = (method) => sent.get(method) ?? 0;
  const transport = () => page.locator("#task-view").getAttribute("data-transport");
  const pushed = async (what) => {
    await page
      .waitForFunction(() => document.getElementById("task-view")?.dataset.transport === "stream", null, {
        timeout: WAIT_MS,
      })
      .catch(() => {});
    const seen = await transport();
    check(
      seen === "stream",
      `${what} reached the page by ${JSON.stringify(seen)}, not by its subscriptions/listen stream ` +
        `(listens sent: ${count("subscriptions/listen")}, tasks/get sent: ${count("tasks/get")})`,
    );
  };

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
    await pushed("the fork");
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

  const info = await at("read /demo/host", async () => (await page.request.get(`${BASE_URL}/demo/host`)).json());
  let restarted = false;
  if (info?.restart) {
    await at("restart the host at the fork and see the stream open again", async () => {
      const listens = count("subscriptions/listen");
      await byId("restart").click();
      await page.locator("#controls-note").getByText("The host restarted").waitFor({ state: "visible" });
      await page.waitForFunction(() => document.getElementById("task-view")?.dataset.transport === "stream");
      check(count("subscriptions/listen") > listens, "the page did not send a new subscriptions/listen after the restart");
      await byId("fork-option-ridge").waitFor({ state: "visible" });
      restarted = true;
    });
  }

  const getsBeforeAnswer = count("tasks/get");
  await at("answer the fork with ridge", async () => {
    await byId("fork-option-ridge").click();
  });

  const ending = byId("ending");
  const endingText = await at("see the ending", async () => {
    await ending.waitFor({ state: "visible" });
    return ((await ending.textContent()) ?? "").replace(/\s+/g, " ").trim();
  });
  const endingId = await ending.getAttribute("data-ending");
  await at("check the ending was pushed", async () => {
    await pushed("the ending");
    const gets = count("tasks/get") - getsBeforeAnswer;
    check(gets === 0, `the page sent ${gets} tasks/get between the answer and the ending, with its stream open`);
  });
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
      `pushed over subscriptions/listen${restarted ? " (reopened after a host restart)" : ""}, ` +
      `resumed after reload, screenshot ${SCREENSHOT} (${seconds} s)`
  );
}

await runTest("story-demo", BASE_URL, main);

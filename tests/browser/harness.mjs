// What the browser tests share: Chromium launched through playwright-core, named steps, and
// the one summary line (or the failed step) a test ends with.
//
// Chromium: `/usr/bin/chromium` (or $CHROMIUM); `launch` gives every run a fresh temporary
// profile (user-data-dir) of its own.

import { chromium } from "playwright-core";

/** The longest any one wait may take. */
export const WAIT_MS = 30_000;
/** The longest a whole run may take. */
const RUN_MS = 180_000;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
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

/** Throws `message` unless `condition` holds. */
export function check(condition, message) {
  if (!condition) throw new Error(message);
}

/**
 * Runs the test `name` against `baseUrl`: `main({ browser, at, watch })` drives it and returns
 * its summary line, printed with exit status 0. `at(step, action)` runs a named step, and
 * `watch(page)` records the page's uncaught errors, which fail the test. A failure prints
 * `FAIL <name> <baseUrl>: <step>: <message>` and exits 1; so does a run past RUN_MS.
 */
export async function runTest(name, baseUrl, main) {
  let step = "launch";
  let browser;
  const pageErrors = [];
  setTimeout(() => {
    console.error(`FAIL ${name} ${baseUrl}: still running after ${RUN_MS} ms (at step: ${step})`);
    process.exit(1);
  }, RUN_MS).unref();
  const at = async (label, action) => {
    step = label;
    return action();
  };
  const watch = (page) => page.on("pageerror", (error) => pageErrors.push(error.message));
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const line = await main({ browser, at, watch });
    check(pageErrors.length === 0, `the page threw: ${pageErrors.join("; ")}`);
    console.log(line);
    await browser.close();
    process.exit(0);
  } catch (error) {
    const message = String(error?.message ?? error).split("\n").slice(0, 12).join("\n");
    console.error(`FAIL ${name} ${baseUrl}: ${step}: ${message}`);
    if (pageErrors.length > 0) console.error(`page errors: ${pageErrors.join("; ")}`);
    await browser?.close().catch(() => {});
    process.exit(1);
  }
}

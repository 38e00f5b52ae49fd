// The page of `dexd serve --demo` in a real browser: it says it is a demo before anything else,
// and within seconds shows a live market with nobody else trading (a two-sided book, trades, a
// candle on the chart, the stream live), without a console error; axe finds nothing serious with
// the banner, at desktop and at phone width.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import AxeBuilder from "@axe-core/playwright";
import { launchBrowser, openPage, startDexd } from "./harness.mjs";

let dexd;
let browser;

before(async () => {
  dexd = await startDexd({ demo: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await dexd?.stop();
});

for (const [name, viewport] of [["desktop", { width: 1440, height: 1000 }], ["phone", { width: 390, height: 844 }]]) {
  test(`the demo's page (${name}) says it is a demo and shows a live market within seconds`, async () => {
    const { page, context, consoleErrors, failedResponses } = await openPage(browser, dexd.url, viewport);
    try {
      const banner = page.locator("#demo-banner");
      assert.equal(await banner.isVisible(), true);
      assert.match(await banner.textContent(), /Demo market\..*dexd serve --demo/s);
      const live = { timeout: 20_000 };
      const bothSides = () =>
        ["book-bids", "book-asks"].every((id) =>
          [...document.querySelectorAll(`#${id} tbody tr`)].some((row) => !row.querySelector("td.empty")),
        );
      await page.waitForFunction(bothSides, null, live);
      await page.locator("#trades tr[data-trade-id]").first().waitFor(live);
      await page.waitForFunction(() => Number(document.getElementById("chart")?.dataset.bars) > 0, null, live);
      assert.equal((await page.textContent("#stream-status")).trim(), "live");
      assert.notEqual((await page.textContent("#last-price")).trim(), "–");
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
      const results = await new AxeBuilder({ page }).analyze();
      const serious = results.violations.filter((violation) => ["serious", "critical"].includes(violation.impact));
      assert.deepEqual(serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target).join(", ")}`), []);
      assert.deepEqual(consoleErrors, []);
      assert.deepEqual(failedResponses, []);
    } finally {
      await context.close();
    }
  });
}

// Regenerates docs/page-desktop.png and docs/page-phone.png: a real dexd running its demo market
// (`dexd serve --demo`) for a while, so that the chart has candles, the book depth and the trade
// list trades; then the page in Debian's Chromium with a test key pasted, a deposit and a resting
// order of its own.
// `cd web && npm run screenshots` (needs target/debug/dexd: `cargo build -p dexd`); the demo runs
// DEMO_MINUTES minutes first (default 20: twenty one-minute candles).
import { join } from "node:path";
import { launchBrowser, openPage, repository, startDexd } from "../tests/harness.mjs";

const TEST_KEY = "0x" + "e5".repeat(32); // a test key, never a real one
const DEMO_MINUTES = Number(process.env.DEMO_MINUTES ?? 20);
const dexd = await startDexd({ demo: true });
const browser = await launchBrowser();
try {
  console.log(`the demo runs for ${DEMO_MINUTES} minutes at ${dexd.url}`);
  await new Promise((done) => setTimeout(done, DEMO_MINUTES * 60_000));
  const book = await dexd.get("/order/buyOrderbooks", { chainId: "1", pair: "ETH/USDC" });
  // A bid of its own a little under the demo's book, so that it rests.
  const price = (Math.floor(Number(book.levels.at(-1).price) * 0.995 * 100) / 100).toFixed(2);
  for (const [name, viewport] of [["desktop", { width: 1440, height: 1000 }], ["phone", { width: 390, height: 844 }]]) {
    const { page, context } = await openPage(browser, dexd.url, viewport);
    if (name === "desktop") {
      await page.getByLabel("Or paste a private key (kept in this page's memory only)").fill(TEST_KEY);
      await page.getByRole("button", { name: "Use this key" }).click();
      await page.getByLabel("Asset").selectOption("USDC");
      await page.getByLabel("Quantity").fill("10000");
      await page.getByRole("button", { name: "Deposit", exact: true }).click();
      await page.getByText(/Deposit of 10000 USDC/).waitFor();
      await page.getByLabel("Price").fill(price);
      await page.getByLabel("Amount", { exact: true }).fill("1.2");
      await page.getByRole("button", { name: "Place order" }).click();
      await page.locator("#open-orders tr[data-order-id]").waitFor();
    }
    await page.waitForFunction(() => Number(document.getElementById("chart")?.dataset.bars) > 1);
    await page.waitForTimeout(1_000);
    await page.screenshot({ path: join(repository, "docs", `page-${name}.png`), fullPage: name === "desktop" });
    await context.close();
  }
} finally {
  await browser.close();
  await dexd.stop();
}

// Regenerates docs/page-desktop.png and docs/page-phone.png: a real dexd with a small market,
// the page in Debian's Chromium with a test key pasted, a deposit and a resting order.
// `cd web && npm run screenshots` (needs target/debug/dexd: `cargo build -p dexd`).
import { join } from "node:path";
import { launchBrowser, openPage, repository, seedMarket, startDexd } from "../tests/harness.mjs";

const TEST_KEY = "0x" + "e5".repeat(32); // a test key, never a real one
const dexd = await startDexd();
const browser = await launchBrowser();
try {
  await seedMarket(dexd);
  for (const [name, viewport] of [["desktop", { width: 1440, height: 1000 }], ["phone", { width: 390, height: 844 }]]) {
    const { page, context } = await openPage(browser, dexd.url, viewport);
    if (name === "desktop") {
      await page.getByLabel("Or paste a private key (kept in this page's memory only)").fill(TEST_KEY);
      await page.getByRole("button", { name: "Use this key" }).click();
      await page.getByLabel("Asset").selectOption("USDC");
      await page.getByLabel("Quantity").fill("10000");
      await page.getByRole("button", { name: "Deposit", exact: true }).click();
      await page.getByText(/Deposit of 10000 USDC/).waitFor();
      await page.getByLabel("Price").fill("2450");
      await page.getByLabel("Amount", { exact: true }).fill("1.2");
      await page.getByRole("button", { name: "Place order" }).click();
      await page.locator("#open-orders tr[data-order-id]").waitFor();
    }
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(repository, "docs", `page-${name}.png`), fullPage: name === "desktop" });
    await context.close();
  }
} finally {
  await browser.close();
  await dexd.stop();
}

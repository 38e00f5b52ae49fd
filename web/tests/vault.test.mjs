// The page on a vault chain, in a real browser, against a real node: anvil with the vault and
// test tokens deployed by `dexd devnet-setup`, and dexd serving that chain in vault mode. An
// injected EIP-1193 wallet (a stand-in that signs in this process with a test key and sends to
// anvil) deposits from the page: the page approves, waits for the approval to be mined, sends
// the deposit, and shows it credited once the blocks on top of it reach the confirmations, with
// the vault's reserves as REST gives them. A withdrawal the wallet signs is paid on chain once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, erc20Abi, http } from "viem";
import { anvil as anvilChain } from "viem/chains";
import { privateKeyToAccount } from "viem/accounts";
import { dexdBinary, launchBrowser, repository, rows, startDexd } from "./harness.mjs";

const ANVIL = join(repository, "contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
/** anvil's first development account: a test key, funded on every fresh anvil. */
const FUNDER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

let work;
let anvil;
let devnet;
let dexd;
let browser;

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function rpc(method, params = []) {
  const response = await fetch(devnet?.rpcUrl ?? anvil.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = await response.json();
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

async function eventually(what, check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), "dexd-vault-page-"));
  const port = await freePort();
  const child = spawn(ANVIL, ["--port", String(port)], { stdio: "ignore" });
  anvil = { child, url: `http://127.0.0.1:${port}` };
  await eventually("anvil", () => rpc("eth_chainId").then(() => true, () => false));
  execFileSync(dexdBinary(), ["devnet-setup", "--rpc-url", anvil.url, "--dir", work, "--funder-key-env", "DEXD_DEVNET_FUNDER_KEY"], {
    env: { ...process.env, DEXD_DEVNET_FUNDER_KEY: FUNDER_KEY },
    stdio: "ignore",
  });
  devnet = JSON.parse(readFileSync(join(work, "devnet.json"), "utf8"));
  // A liability root every second, so that the page's check has one to read within the test.
  writeFileSync(devnet.dexdConfig, readFileSync(devnet.dexdConfig, "utf8").replace(/^root_interval_ms = \d+$/m, "root_interval_ms = 1000"));
  dexd = await startDexd({ work: join(work, "dexd"), config: devnet.dexdConfig });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await dexd?.stop();
  anvil?.child.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
});

// First, while the vault has paid nothing (a fresh journal is refused against one that has).
test("a halt of crediting is shown on the page with its reason", async () => {
  const { privateKey } = devnet.accounts[1];
  const account = privateKeyToAccount(privateKey);
  const chain = { ...anvilChain, id: Number(devnet.chainId), rpcUrls: { default: { http: [devnet.rpcUrl] } } };
  const wallet = createWalletClient({ account, chain, transport: http(devnet.rpcUrl) });
  const node = createPublicClient({ chain, transport: http(devnet.rpcUrl) });
  // A deposit before the configured start block: never read, but the vault counts it.
  const depositNative = [{ type: "function", name: "depositNative", stateMutability: "payable", inputs: [], outputs: [] }];
  const hash = await wallet.writeContract({ address: devnet.vault, abi: depositNative, functionName: "depositNative", value: 10n ** 17n });
  const receipt = await node.waitForTransactionReceipt({ hash });
  // A second venue on the same vault and operator key: it must commit no liability root (the
  // test's venue would find a root in the vault that its own journal does not give, and stop
  // committing, as it should).
  const config = readFileSync(devnet.dexdConfig, "utf8")
    .replace(/^start_block = \d+$/m, `start_block = ${receipt.blockNumber + 1n}`)
    .replace(/^root_interval_ms = \d+$/m, "root_interval_ms = 86400000");
  const halting = join(work, "halting");
  const configPath = join(work, "halting.toml");
  writeFileSync(configPath, config);
  const halted = await startDexd({ work: halting, config: configPath });
  try {
    await rpc("anvil_mine", ["0x5"]);
    await eventually("crediting halted", async () =>
      (await halted.get("/account/assetsInfo", { chainId: devnet.chainId })).custody.crediting === "halted");
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    await page.goto(`${halted.url}/#${devnet.chainId}/ETH/USDC`);
    await page.waitForSelector('body[data-ready="true"]');
    const alert = page.getByRole("alert").filter({ hasText: "Deposits are not being credited" });
    await alert.waitFor();
    assert.match(await alert.textContent(), /taken 1 deposits/);
    await context.close();
  } finally {
    await halted.stop();
  }
});

test("on a vault chain the page deposits from the wallet, shows the credit and reserves, and withdraws", async () => {
  const { address, privateKey } = devnet.accounts[0];
  const account = privateKeyToAccount(privateKey);
  const chain = { ...anvilChain, id: Number(devnet.chainId), rpcUrls: { default: { http: [devnet.rpcUrl] } } };
  const wallet = createWalletClient({ account, chain, transport: http(devnet.rpcUrl) });
  const node = createPublicClient({ chain, transport: http(devnet.rpcUrl) });
  const usdc = devnet.tokens.USDC.address;
  const held = () => node.readContract({ address: usdc, abi: erc20Abi, functionName: "balanceOf", args: [address] });
  const heldBefore = await held();

  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const asked = [];
  // The stand-in wallet: accounts and typed-data signatures as a wallet gives them,
  // transactions signed with the test key and sent to anvil, reads forwarded to anvil.
  await context.exposeFunction("testWalletRequest", async (method, json) => {
    const params = JSON.parse(json ?? "[]");
    asked.push(method);
    if (method === "eth_requestAccounts" || method === "eth_accounts") return [account.address];
    if (method === "eth_signTypedData_v4") {
      const typedData = JSON.parse(params[1]);
      const { EIP712Domain: _domain, ...types } = typedData.types;
      return account.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
    }
    if (method === "eth_sendTransaction") {
      const [transaction] = params;
      return wallet.sendTransaction({ to: transaction.to, data: transaction.data, value: BigInt(transaction.value ?? "0x0") });
    }
    return rpc(method, params);
  });
  await context.addInitScript(() => {
    window.ethereum = {
      request: ({ method, params }) => window.testWalletRequest(method, JSON.stringify(params ?? [])),
    };
  });
  const page = await context.newPage();
  const consoleErrors = [];
  const sent = [];
  page.on("console", (message) => message.type() === "error" && consoleErrors.push(message.text()));
  page.on("request", (request) => sent.push(request.postData() ?? ""));
  try {
    await page.goto(`${dexd.url}/#${devnet.chainId}/ETH/USDC`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.getByRole("button", { name: "Connect a browser wallet" }).click();
    await page.waitForFunction(() => document.body.dataset.signing === "wallet");
    assert.match(await page.textContent("#vault-help"), new RegExp(devnet.vault));

    // The deposit: approve (mined before the deposit is sent), then deposit, from the wallet.
    await page.getByLabel("Asset").selectOption("USDC");
    await page.getByLabel("Quantity").fill("250");
    await page.getByRole("button", { name: "Deposit", exact: true }).click();
    await page.getByText(/Deposit sent \(0x[0-9a-f]{64}\); it is credited after 2 confirmations/).waitFor({ timeout: 30_000 });
    const announced = (await page.textContent("#announcer")).match(/0x[0-9a-f]{64}/)[0];
    const sends = asked.filter((method) => method === "eth_sendTransaction").length;
    assert.equal(sends, 2, "an approve, then the deposit");
    const [approveSent, depositSent] = [asked.indexOf("eth_sendTransaction"), asked.lastIndexOf("eth_sendTransaction")];
    const receiptAsked = asked.indexOf("eth_getTransactionReceipt", approveSent);
    assert.ok(approveSent < receiptAsked && receiptAsked < depositSent, `the approve was mined before the deposit was sent: ${asked}`);
    await rpc("anvil_mine", ["0x3"]);
    await page.getByRole("tab", { name: "Transfers" }).click();
    await eventually("the deposit confirmed on the page", async () =>
      (await rows(page, "#transfers")).some((cells) => cells[0] === "Deposit" && cells[2] === "250" && cells[3] === "confirmed" && cells[4] === announced),
    );
    await page.getByRole("tab", { name: "Balances" }).click();
    await eventually("the balance credited on the page", async () =>
      (await rows(page, "#balances")).some((cells) => cells[0] === "USDC" && cells[2] === "250"),
    );
    const balances = await (await fetch(`${dexd.url}/account/assetBalances?chainId=${devnet.chainId}&account=${address}`)).json();
    assert.equal(balances.balances.find((balance) => balance.symbol === "USDC").available, "250");
    // "Your balance is in the root": the page checks the account's leaf against the root it reads
    // from the vault through the wallet, and offers the proof to download.
    await eventually("the page's check of a root holding the 250 USDC", async () => {
      await rpc("anvil_mine", ["0x1"]);
      return (await rows(page, "#liability-table")).some((cells) => cells[0] === "USDC" && cells[1] === "250" && cells[2] === "yes")
        && await page.evaluate(() => document.body.dataset.liability === "holds");
    }, 40_000).catch(async (error) => {
      throw new Error(`${error.message}: ${await page.textContent("#liability-state")} ${JSON.stringify(await rows(page, "#liability-table"))}\n${dexd.log().slice(-3000)}`);
    });
    assert.match(await page.textContent("#liability-state"), /Your balance is in the root/);
    assert.ok(asked.includes("eth_call"), "the root was read from the vault through the wallet");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download proof" }).click()]);
    const proof = JSON.parse(readFileSync(await download.path(), "utf8"));
    assert.equal(proof.account, address);
    assert.ok(proof.leaves.find((leaf) => leaf.symbol === "USDC").exitCalldata.startsWith("0x"));
    // The vault's reserves as REST gives them.
    await eventually("the reserves on the page equal REST's", async () => {
      const reserves = await (await fetch(`${dexd.url}/account/reserves?chainId=${devnet.chainId}`)).json();
      const expected = reserves.assets.map((item) => [item.symbol, item.onChain ?? "–", item.liabilities, item.surplus ?? "–"]);
      return JSON.stringify(await rows(page, "#reserves-table")) === JSON.stringify(expected)
        && expected.some((cells) => cells[0] === "USDC" && cells[2] === "250");
    });

    // The withdrawal: the wallet signs the vault's Withdrawal; the payer pays it on chain.
    await page.getByLabel("Quantity").fill("100");
    await page.getByRole("button", { name: "Withdraw", exact: true }).click();
    await page.getByText(/Withdrawal of 100 USDC: pending/).waitFor();
    // It waits for a liability root covering it to pass the vault's challenge period (a minute on
    // the devnet): the test moves the chain's clock past it rather than wait.
    let movedPast = null;
    let seen = null;
    await eventually("the withdrawal sent", async () => {
      const answer = await (await fetch(`${dexd.url}/portfolio/withdrawHistories?chainId=${devnet.chainId}&account=${address}`)).json();
      const withdrawal = answer.withdrawals[0];
      seen = withdrawal;
      if (withdrawal?.waitingFor === "challenge" && movedPast !== withdrawal.payableAfter) {
        movedPast = withdrawal.payableAfter;
        await rpc("evm_increaseTime", [61]);
      }
      // Blocks, so that the root gets its confirmations (anvil mines only for transactions).
      await rpc("anvil_mine", ["0x1"]);
      return withdrawal?.status === "sent";
    }, 40_000).catch((error) => { throw new Error(`${error.message}: ${JSON.stringify(seen)}\n${dexd.log().slice(-4000)}`); });
    await rpc("anvil_mine", ["0x3"]);
    await page.getByRole("tab", { name: "Transfers" }).click();
    await eventually("the withdrawal confirmed on the page", async () =>
      (await rows(page, "#transfers")).some((cells) => cells[0] === "Withdrawal" && cells[2] === "100" && cells[3] === "confirmed"),
    );
    assert.equal((await held()) - heldBefore, -250_000_000n + 100_000_000n, "250 USDC went in, 100 came out, once");

    // Asked of the vault itself, from the wallet (what to do when the venue does not answer):
    // the venue serves it through a final root, and lists it as asked on chain.
    await page.getByLabel("Quantity").fill("50");
    await page.getByRole("button", { name: "Ask the vault" }).click();
    await page.getByText(/Withdrawal of 50 USDC asked of the vault/).waitFor();
    let asked_ = null;
    let passed = null;
    await eventually("the request served", async () => {
      const answer = await (await fetch(`${dexd.url}/portfolio/withdrawHistories?chainId=${devnet.chainId}&account=${address}`)).json();
      asked_ = answer.withdrawals[0];
      if (asked_?.waitingFor === "challenge" && passed !== asked_.payableAfter) {
        passed = asked_.payableAfter;
        await rpc("evm_increaseTime", [61]);
      }
      await rpc("anvil_mine", ["0x1"]);
      return asked_?.requested === "chain" && asked_.status === "confirmed";
    }, 40_000).catch((error) => { throw new Error(`${error.message}: ${JSON.stringify(asked_)}\n${dexd.log().slice(-4000)}`); });
    assert.equal(asked_.quantity, "50");
    assert.equal((await held()) - heldBefore, -250_000_000n + 150_000_000n, "the request paid 50 more, once");
    assert.ok(sent.every((body) => !body.includes(privateKey.slice(2)) && !/privatekey/i.test(body)), "no request carried the key");
    assert.deepEqual(consoleErrors, []);
  } finally {
    await context.close();
  }
});

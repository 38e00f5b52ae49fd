//! The page's start: one stream, the chain and pair pickers, the market and account views, and
//! the two live regions (errors in an alert, results in a status). Everything the page shows
//! comes from the dexd that serves it.

import "./style.css";
import { Account } from "./account";
import {
  chains as venueChains, describe, openStream, reader, type Asset, type Chain, type Custody, type Pair, type StreamStatus,
} from "./api";
import { element } from "./dom";
import { Market } from "./market";
import { setUpTabs } from "./tabs";

/** How often the pair shown is looked at again for a halt or a resume. */
const HALT_RECHECK_MS = 2_000;

function announce(text: string): void {
  element("announcer").textContent = text;
  element("errors").replaceChildren();
}

function fail(text: string): void {
  const errors = element("errors");
  const paragraph = document.createElement("p");
  paragraph.textContent = text;
  errors.replaceChildren(paragraph);
}

async function main(): Promise<void> {
  setUpTabs(element("account-tabs"));
  let market: Market | null = null;
  let account: Account | null = null;
  const stream = openStream({
    onStatus: (status: StreamStatus) => {
      element("stream-status").textContent = status;
      document.body.dataset.stream = status;
    },
    onReconnected: () => {
      announce("Stream reconnected; the views are resynchronised.");
      void market?.resynchronise();
      void account?.resynchronise();
    },
    onResync: (_id, reason) =>
      announce(`Order book resynchronised (${reason === "gap" ? "a gap in the book's sequence" : "the book's checksum did not match"}).`),
    // A subscription that ended (UNAVAILABLE) the stream makes again; any other error is shown.
    onMessage: (message) => {
      if (message.event === "error" && message.code !== "UNAVAILABLE") fail(`Stream: ${String(message.message ?? message.code)}`);
    },
  });
  // The stream keeps trying with backoff when the first connection fails.
  stream.connect().catch(() => undefined);
  market = new Market(stream, { changed: () => account?.preview(), announce, fail });
  account = new Account(stream, {
    announce,
    fail,
    bestPrices: () => ({ ask: market?.bestAsk()?.price ?? null, bid: market?.bestBid()?.price ?? null }),
  });

  const chainSelect = element<HTMLSelectElement>("chain");
  const pairSelect = element<HTMLSelectElement>("pair");
  let chains: Chain[];
  try {
    chains = await venueChains();
  } catch (error) {
    return fail(`The venue's chains cannot be read: ${describe(error)}`);
  }
  chainSelect.replaceChildren(...chains.map((chain) => new Option(`${chain.name} (${chain.chainId})`, chain.chainId)));
  let pairs: Pair[] = [];
  let assets: Asset[] = [];
  let custody: Custody = { mode: "ledger" };

  // A pair the operator halted takes cancels only: said above the order form, and looked at
  // again now and then (a halt comes without a stream message).
  const showHalt = (pair: Pair) => {
    const banner = element("pair-halted");
    banner.hidden = !pair.halted;
    banner.textContent = pair.halted ? `Trading on ${pair.symbol} is halted by the operator: only cancels are taken.` : "";
  };
  window.setInterval(() => {
    const symbol = pairSelect.value;
    reader(chainSelect.value).pairs().then((list) => {
      const pair = list.find((item) => item.symbol === symbol);
      if (pair && pairSelect.value === symbol) showHalt(pair);
    }).catch(() => undefined);
  }, HALT_RECHECK_MS);
  const showPair = async () => {
    const pair = pairs.find((item) => item.symbol === pairSelect.value);
    if (!pair || !market || !account) return;
    showHalt(pair);
    document.title = `${pair.symbol} · dexd`;
    history.replaceState(null, "", `#${chainSelect.value}/${pair.symbol}`);
    await Promise.all([
      market.show(chainSelect.value, pair.symbol, pair.lastPrice),
      account.show({ chainId: chainSelect.value, pair, assets, custody }),
    ]);
  };
  const showChain = async (wantedPair?: string) => {
    const chainId = chainSelect.value;
    try {
      const client = reader(chainId);
      const [pairList, assetAnswer] = await Promise.all([client.pairs(), client.assetsInfo()]);
      pairs = pairList;
      assets = assetAnswer.assets;
      custody = assetAnswer.custody;
    } catch (error) {
      return fail(`Chain ${chainId}: ${describe(error)}`);
    }
    pairSelect.replaceChildren(...pairs.map((pair) => new Option(pair.symbol, pair.symbol)));
    if (wantedPair && pairs.some((pair) => pair.symbol === wantedPair)) pairSelect.value = wantedPair;
    await showPair();
  };
  chainSelect.addEventListener("change", () => void showChain());
  pairSelect.addEventListener("change", () => void showPair());

  // The address's fragment names a chain and pair ("#1/ETH/USDC"); otherwise the first of each.
  const [wantedChain, ...pairParts] = decodeURIComponent(location.hash.slice(1)).split("/");
  if (chains.some((chain) => chain.chainId === wantedChain)) chainSelect.value = wantedChain;
  await showChain(pairParts.length === 2 ? pairParts.join("/") : undefined);
  document.body.dataset.ready = "true";
}

main().catch((error) => fail(`The page failed to start: ${describe(error)}`));

//! The market views of one chain and pair: the chart, the live book with depth bars and the
//! spread, recent trades, the last price and its 24 h change. REST gives the start; the stream
//! keeps it live; a gap or a bad checksum starts the book's subscription over.

import {
  describe, reader, type BookMessage, type DexdStream, type Level, type StreamBook, type SubscriptionEvent, type Trade,
  type TradesMessage,
} from "./api";
import { sortedAsks, sortedBids } from "./book";
import { CandleChart } from "./chart";
import { compare, percentChange, subtract } from "./decimal";
import { element, fill, row, time } from "./dom";

/** The contract's candle intervals. */
export const INTERVALS = ["1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w"] as const;
/** Levels shown per side, and rows of recent trades kept. */
const BOOK_ROWS = 12;
const TRADE_ROWS = 40;
/** Candles the chart reads at the start and on a new interval. */
const CHART_CANDLES = 500;
/** The book subscription's depth: the least the stream allows, which the checksum covers. */
const STREAM_DEPTH = 25;

export interface MarketCallbacks {
  /** The book or the trades moved: the order form's preview may change. */
  changed(): void;
  announce(text: string): void;
  fail(text: string): void;
}

export class Market {
  private readonly chart: CandleChart;
  private trades: Trade[] = [];
  // The pair's three subscriptions; the book's id changes when it starts over, the candles'
  // when the interval does.
  private bookSubscription: string | null = null;
  private tradesSubscription: string | null = null;
  private candleSubscription: string | null = null;
  private chainId = "";
  private pair = "";
  interval: string = "1m";
  lastPrice: string | null = null;

  constructor(private readonly stream: DexdStream, private readonly callbacks: MarketCallbacks) {
    this.chart = new CandleChart(element("chart"));
    const group = element("intervals");
    for (const interval of INTERVALS) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = interval;
      button.dataset.interval = interval;
      button.setAttribute("aria-pressed", String(interval === this.interval));
      button.addEventListener("click", () => void this.setInterval(interval));
      group.append(button);
    }
  }

  bestAsk(): Level | undefined {
    return sortedAsks(this.book())[0];
  }

  bestBid(): Level | undefined {
    return sortedBids(this.book())[0];
  }

  /** Shows a pair: drops the old subscriptions, reads REST, subscribes again. */
  async show(chainId: string, pair: string, lastPrice: string | null): Promise<void> {
    for (const id of [this.bookSubscription, this.tradesSubscription, this.candleSubscription]) {
      if (id) this.stream.unsubscribe(id);
    }
    this.candleSubscription = null;
    this.chainId = chainId;
    this.pair = pair;
    this.lastPrice = lastPrice;
    this.renderBook();
    this.bookSubscription = this.stream.subscribe("book", { chainId, pair, depth: STREAM_DEPTH }, (message) => this.onBook(message));
    this.tradesSubscription = this.stream.subscribe("trades", { chainId, pair }, (message) => this.onTrades(message));
    await Promise.all([this.loadTrades(), this.loadCandles(), this.loadChange()]);
    this.subscribeCandles();
  }

  /** After a reconnect: the stream sends fresh snapshots; REST refills what it does not resend. */
  async resynchronise(): Promise<void> {
    await Promise.all([this.loadTrades(), this.loadCandles(), this.loadChange()]);
  }

  private subscribeCandles(): void {
    if (this.candleSubscription) this.stream.unsubscribe(this.candleSubscription);
    const { chainId, pair, interval } = this;
    this.candleSubscription = this.stream.subscribe("candles", { chainId, pair, interval }, (message) => {
      if (message.event === "update" && message.interval === this.interval) {
        this.chart.update(message.candle);
      }
    });
  }

  async setInterval(interval: string): Promise<void> {
    this.interval = interval;
    for (const button of element("intervals").querySelectorAll("button")) {
      button.setAttribute("aria-pressed", String(button.dataset.interval === interval));
    }
    await this.loadCandles();
    this.subscribeCandles();
    this.callbacks.announce(`Chart interval ${interval}.`);
  }

  private async loadCandles(): Promise<void> {
    const { chainId, pair, interval } = this;
    try {
      const candles = await reader(chainId).candles(pair, interval, CHART_CANDLES);
      if (chainId === this.chainId && pair === this.pair && interval === this.interval) this.chart.set(interval, candles);
    } catch (error) {
      this.callbacks.fail(`Candles: ${describe(error)}`);
    }
  }

  private async loadTrades(): Promise<void> {
    const { chainId, pair } = this;
    try {
      const trades = await reader(chainId).trades(pair, TRADE_ROWS);
      if (chainId !== this.chainId || pair !== this.pair) return;
      this.trades = trades;
      if (this.trades[0]) this.lastPrice = this.trades[0].price;
      this.renderTrades();
    } catch (error) {
      this.callbacks.fail(`Trades: ${describe(error)}`);
    }
  }

  private async loadChange(): Promise<void> {
    const { chainId, pair } = this;
    const now = Date.now();
    try {
      const candles = await reader(chainId).candles(pair, "1h", 25, { startTime: now - 24 * 3_600_000, endTime: now });
      if (chainId !== this.chainId || pair !== this.pair) return;
      const first = candles[0];
      const last = candles[candles.length - 1];
      element("change-24h").textContent = first && last ? percentChange(first.open, last.close) ?? "–" : "–";
      this.renderTicker();
    } catch (error) {
      this.callbacks.fail(`24 h change: ${describe(error)}`);
    }
  }

  /** The pair's book as the stream keeps it (none before its snapshot, or while it resyncs). */
  private book(): StreamBook | undefined {
    return this.bookSubscription ? this.stream.book(this.bookSubscription) : undefined;
  }

  /** A book message the stream checked and applied (it follows the last, its checksum matches). */
  private onBook(message: BookMessage | SubscriptionEvent): void {
    const book = this.book();
    if ((message.event !== "snapshot" && message.event !== "update") || !book) return;
    element("book").dataset.sequence = String(book.sequence);
    this.renderBook();
    this.callbacks.changed();
  }

  private onTrades(message: TradesMessage | SubscriptionEvent): void {
    if (message.event !== "update") return;
    const fresh = message.trades.slice().reverse();
    const known = new Set(this.trades.map((trade) => trade.tradeId));
    this.trades = [...fresh.filter((trade) => !known.has(trade.tradeId)), ...this.trades].slice(0, TRADE_ROWS);
    if (this.trades[0]) this.lastPrice = this.trades[0].price;
    this.renderTrades();
    this.callbacks.changed();
  }

  private renderTicker(): void {
    element("last-price").textContent = this.lastPrice ?? "–";
  }

  private renderTrades(): void {
    fill(
      "trades",
      this.trades.map((trade) =>
        row([trade.price, trade.amount, time(trade.timestamp)], {
          class: trade.takerDirection === "buy" ? "up" : "down",
          "data-trade-id": trade.tradeId,
        }),
      ),
      "No trades yet.",
    );
    this.renderTicker();
  }

  private renderBook(): void {
    const book = this.book();
    const asks = sortedAsks(book).slice(0, BOOK_ROWS);
    const bids = sortedBids(book).slice(0, BOOK_ROWS);
    const largest = [...asks, ...bids].reduce((most, level) => (compare(level.amount, most) > 0 ? level.amount : most), "0");
    const levelRow = (level: Level, side: string) => {
      const tr = row([level.price, level.amount, String(level.orders)], { class: side });
      // Depth bars: the level's amount against the largest shown, as a background width (set
      // through the CSS object model, which the page's content security policy allows).
      const share = largest === "0" ? 0 : Math.round((Number(level.amount) / Number(largest)) * 100);
      tr.style.setProperty("--depth", `${share}%`);
      return tr;
    };
    fill("book-asks", asks.slice().reverse().map((level) => levelRow(level, "ask")), "No asks.");
    fill("book-bids", bids.map((level) => levelRow(level, "bid")), "No bids.");
    const bestAsk = asks[0];
    const bestBid = bids[0];
    element("spread").textContent =
      bestAsk && bestBid ? `Spread ${subtract(bestAsk.price, bestBid.price)}` : "Spread –";
  }
}

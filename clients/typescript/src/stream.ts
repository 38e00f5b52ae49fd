/**
 * The live streams (`GET /ws`, docs/streams.md) with the resilience a bot needs: each `book`
 * subscription's levels kept and checked (every update must follow the one before, and the
 * CRC-32 checksum must match); a book that fails either is subscribed again on the spot and its
 * updates dropped until the new snapshot; a lost connection opened again with exponential
 * backoff and every subscription made again, each from a fresh snapshot. It works with the
 * browser's `WebSocket` or any constructor of the same shape (the `ws` package in Node).
 */

import type { ChannelMessages, Level, SubscriptionEvent } from "./types.js";

/** The smallest WebSocket this needs (the browser's, or `ws`'s). */
export interface WebSocketLike {
  send(data: string): void;
  close(): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: unknown) => void) | null;
  onerror: ((event: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** A message of the server, as sent. */
export type StreamMessage = Record<string, unknown> & { event: string; id?: unknown; channel?: string };

/**
 * What a subscription's own messages go to (after its book, if it has one, was checked): the
 * channel's messages, typed, and the subscription's answers.
 */
export type StreamHandler<C extends string = string> = (
  message: (C extends keyof ChannelMessages ? ChannelMessages[C] : StreamMessage) | SubscriptionEvent,
) => void;

/** Where the connection is: opening the first time, open, or lost and being opened again. */
export type StreamStatus = "connecting" | "live" | "reconnecting";

export interface StreamOptions {
  /** The server, such as `http://127.0.0.1:8080`. */
  baseUrl: string;
  chainId: string;
  /** The WebSocket constructor (default: the global `WebSocket`). */
  WebSocket?: WebSocketConstructor;
  /** The account the `orders` and `balances` channels subscribe to when a subscription names
   * none (a client bound to a subaccount gives its address). */
  account?: string;
  /** Called with every message, after the book it belongs to was checked and applied. */
  onMessage?: (message: StreamMessage) => void;
  /** Called whenever the connection's status changes. */
  onStatus?: (status: StreamStatus) => void;
  /** Called when a lost connection is open again (every subscription is being made again). */
  onReconnected?: () => void;
  /** Called when a book is taken again, with why ("gap" or "checksum"). */
  onResync?: (id: string, reason: "gap" | "checksum") => void;
  /** The first wait before opening a lost connection again (ms); doubled up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/** A book as the stream keeps it: price (canonical decimal) → its level, as the server sent it. */
export interface StreamBook { bids: Map<string, Level>; asks: Map<string, Level>; sequence: number }

/** The protocol's checksum: CRC-32 (IEEE) of the top 25 bids then asks, `price:amount`, `|`. */
export function bookChecksum(book: StreamBook, levels = 25): number {
  const bids = [...book.bids].sort((a, b) => compareDecimal(b[0], a[0])).slice(0, levels);
  const asks = [...book.asks].sort((a, b) => compareDecimal(a[0], b[0])).slice(0, levels);
  return crc32([...bids, ...asks].map(([price, level]) => `${price}:${level.amount}`).join("|"));
}

function compareDecimal(left: string, right: string): number {
  const [leftWhole, leftFraction = ""] = left.split(".");
  const [rightWhole, rightFraction = ""] = right.split(".");
  if (leftWhole.length !== rightWhole.length) return leftWhole.length - rightWhole.length;
  if (leftWhole !== rightWhole) return leftWhole < rightWhole ? -1 : 1;
  const width = Math.max(leftFraction.length, rightFraction.length);
  const a = leftFraction.padEnd(width, "0");
  const b = rightFraction.padEnd(width, "0");
  return a === b ? 0 : a < b ? -1 : 1;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let index = 0; index < 256; index++) {
    let value = index;
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? 0xedb88320 ^ (value >>> 1) : value >>> 1;
    table[index] = value >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

interface Subscription { channel: string; params: Record<string, unknown>; handler?: (message: StreamMessage) => void }

export class DexdStream {
  /** The books of the `book` subscriptions, by pair (the newest subscription's, for a pair on two chains). */
  readonly books = new Map<string, StreamBook>();
  /** The same books, by subscription. */
  private readonly booksById = new Map<string, StreamBook>();
  /** Connections opened again after one was lost. */
  reconnects = 0;
  /** Books taken again after a gap or a checksum mismatch. */
  resyncs = 0;
  private socket?: WebSocketLike;
  private readonly url: string;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly resyncing = new Set<string>();
  private nextId = 1;
  private backoffMs: number;
  private closed = false;
  /** Whether the connection was ever lost (the next open is a reconnect). */
  private lostOnce = false;
  private timer?: ReturnType<typeof setTimeout>;

  constructor(private readonly options: StreamOptions) {
    this.url = `${options.baseUrl.replace(/^http/, "ws").replace(/\/$/, "")}/ws`;
    this.backoffMs = options.initialBackoffMs ?? 250;
  }

  /** Opens the connection; resolves once it is open (and keeps trying, with backoff, if it fails). */
  connect(): Promise<void> {
    this.options.onStatus?.(this.lostOnce ? "reconnecting" : "connecting");
    return new Promise((resolve, reject) => {
      const Socket = this.options.WebSocket ?? (globalThis as unknown as { WebSocket: WebSocketConstructor }).WebSocket;
      const socket = new Socket(this.url);
      this.socket = socket;
      let opened = false;
      socket.onopen = () => {
        opened = true;
        this.backoffMs = this.options.initialBackoffMs ?? 250;
        this.options.onStatus?.("live");
        for (const id of this.subscriptions.keys()) this.send("subscribe", id);
        if (this.lostOnce) this.options.onReconnected?.();
        resolve();
      };
      socket.onmessage = (event) => {
        let message: StreamMessage;
        try {
          message = JSON.parse(String(event.data)) as StreamMessage;
        } catch {
          return;
        }
        this.take(message);
      };
      socket.onerror = () => {
        if (!opened) reject(new Error(`cannot open ${this.url}`));
      };
      socket.onclose = () => this.lost();
    });
  }

  /**
   * Subscribes to `channel` with its parameters (a `chainId` among them names another chain than
   * the stream's); `handler` gets this subscription's messages. Returns the request id.
   */
  subscribe<C extends string>(channel: C, params: Record<string, unknown> = {}, handler?: StreamHandler<C>): string {
    const id = `s${this.nextId++}`;
    if ((channel === "orders" || channel === "balances") && params.account === undefined && this.options.account !== undefined) {
      params = { ...params, account: this.options.account };
    }
    this.subscriptions.set(id, { channel, params, handler: handler as ((message: StreamMessage) => void) | undefined });
    this.send("subscribe", id);
    return id;
  }

  /** The book of a `book` subscription, checked up to its last message (none while it resyncs). */
  book(id: string): StreamBook | undefined {
    return this.booksById.get(id);
  }

  /** Ends a subscription: its messages still on the way are dropped, its book forgotten. */
  unsubscribe(id: string): void {
    if (!this.subscriptions.has(id)) return;
    this.send("unsubscribe", id);
    this.subscriptions.delete(id);
    this.resyncing.delete(id);
    this.forgetBook(id);
  }

  /** Drops a subscription's book, and its place in `books` unless a newer one took it. */
  private forgetBook(id: string): void {
    const book = this.booksById.get(id);
    this.booksById.delete(id);
    for (const [pair, kept] of this.books) if (kept === book) this.books.delete(pair);
  }

  /** Closes the connection for good. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.socket?.close();
  }

  private send(op: "subscribe" | "unsubscribe", id: string): void {
    const subscription = this.subscriptions.get(id);
    if (!subscription || !this.socket) return;
    try {
      this.socket.send(JSON.stringify({ op, id, channel: subscription.channel, chainId: this.options.chainId, ...subscription.params }));
    } catch {
      // Not open: the subscription is made when the connection opens again.
    }
  }

  private lost(): void {
    if (this.closed) return;
    this.lostOnce = true;
    this.options.onStatus?.("reconnecting");
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 10_000);
    this.timer = setTimeout(() => {
      this.books.clear();
      this.booksById.clear();
      this.resyncing.clear();
      this.connect().then(
        () => { this.reconnects += 1; },
        () => { /* onclose follows and tries again */ },
      );
    }, wait);
  }

  private take(message: StreamMessage): void {
    const id = typeof message.id === "string" ? message.id : "";
    const subscription = this.subscriptions.get(id);
    // A message of a subscription ended here (or of none) goes to no handler.
    if (message.event === "error" && message.code === "UNAVAILABLE" && subscription) {
      this.send("subscribe", id);
    }
    if (message.channel === "book" && (message.event === "snapshot" || message.event === "update")) {
      if (!subscription) return;
      if (this.resyncing.has(id)) {
        if (message.event !== "snapshot") return;
        this.resyncing.delete(id);
      }
      const failure = this.applyBook(id, message);
      if (failure) {
        this.resyncs += 1;
        this.resyncing.add(id);
        this.forgetBook(id);
        this.options.onResync?.(id, failure);
        this.send("unsubscribe", id);
        this.send("subscribe", id);
        return;
      }
    }
    subscription?.handler?.(message);
    this.options.onMessage?.(message);
  }

  /** Applies a book message; why it cannot be (a gap or a checksum mismatch), or null. */
  private applyBook(id: string, message: StreamMessage): "gap" | "checksum" | null {
    let book = this.booksById.get(id);
    if (message.event === "snapshot") {
      book = { bids: new Map(), asks: new Map(), sequence: 0 };
      this.booksById.set(id, book);
      this.books.set(String(message.pair), book);
    } else if (!book || book.sequence !== message.previousSequence) {
      return "gap";
    }
    for (const side of ["bids", "asks"] as const) {
      for (const level of (message[side] as Level[]) ?? []) {
        if (level.amount === "0") book[side].delete(level.price);
        else book[side].set(level.price, level);
      }
    }
    book.sequence = Number(message.sequence);
    return message.checksum === undefined || bookChecksum(book) === message.checksum ? null : "checksum";
  }
}

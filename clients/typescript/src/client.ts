/**
 * dexd's REST API for one chain, optionally as one account: every read, and every write signed
 * here (EIP-712, `signing.ts`), so that no key ever leaves the process. Errors are `ApiError`s
 * with the contract's code. It keeps no state beyond the chain's published EIP-712 types and
 * assets, read once.
 */

import { ApiError } from "./errors.js";
import { encodeAbiParameters, getAddress, keccak256, slice, type Address, type Hash } from "viem";
import { pinnedEip712 } from "./domain.js";
import { DexdStream, type StreamOptions } from "./stream.js";
import { canonicalDecimal, signBatch, signRequest, type Signer } from "./signing.js";
import { NATIVE_TOKEN, requestWithdrawal, type TransactionSender } from "./vault.js";
import type {
  AccountTrade, Agent, Asset, Balance, BatchResult, Candle, Chain, Custody, CustodyState, Eip712, JournalLine,
  JournalPage, LiabilityLeaf, ListedWithdrawal, LiabilityProof, LiabilityRoot, ListOptions, Order, OrderBook, OrderDetail, Pair,
  Placed, Position, RateLimits, Reserves, Subaccount, SubaccountTransfer, Tradable, Trade, Transfer, Twap,
} from "./types.js";

export interface ClientOptions {
  /** The server, such as `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The chain, such as `"1"`. */
  chainId: string;
  /** Who signs the writes (none: reads only). */
  signer?: Signer;
  /** The account to act for as its approved agent (default: the signer's own). */
  account?: string;
  /**
   * The account's subaccount to bind the client to, 1 to 1,000 (default 0, the account itself):
   * every read, write and stream of the client is then that subaccount's; only transfers,
   * deposits and withdrawals are the owner's.
   */
  subaccount?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /**
   * The venue contract the client signs for (the EIP-712 domain's `verifyingContract`); when
   * left out, the first answer of `GET /account/eip712` sets it and it is held from then on.
   */
  verifyingContract?: string;
}

/** An order's terms, as `addOrder` and a batch take them. */
export interface OrderTerms {
  symbol: string;
  direction: "buy" | "sell";
  amount: string | number;
  /** A limit price; a market order without one. */
  price?: string | number;
  type?: "limit" | "market";
  timeInForce?: "GTC" | "IOC" | "FOK";
  postOnly?: boolean;
  clientOrderId?: string;
  /** Makes a trigger order: it waits until a trade prints at or beyond this price. */
  triggerPrice?: string | number;
  triggerCondition?: "above" | "below";
  /** A one-cancels-other group's name (1 to 36 of A-Z a-z 0-9 . _ : -). */
  ocoGroup?: string;
  /** When the order is cancelled if still open, in ms since the epoch. */
  expiresAt?: number;
}

/** A TWAP's terms (`DexdClient.addTwap`). */
export interface TwapTerms {
  symbol: string;
  direction: "buy" | "sell";
  /** The whole amount of base. */
  amount: string | number;
  /** 300,000 to 86,400,000 ms. */
  durationMs: number;
  /** 30,000 to 3,600,000 ms, dividing `durationMs`. */
  intervalMs: number;
  /** No slice buys above (sells below) it; without it, at most 3 % through the best price. */
  limitPrice?: string | number;
  clientTwapId?: string;
}

type Query = Record<string, string | number | undefined>;

/** A list's query parameters. */
function listQuery(list: ListOptions = {}): Query {
  return { limit: list.limit, cursor: list.cursor, startTime: list.startTime, endTime: list.endTime };
}

/** `text` (canonical) in the asset's smallest units; more decimals than the asset has would sign or
 * send another amount than the one asked for, and are refused. */
function unitsOf(asset: Asset, text: string): bigint {
  const [whole, fraction = ""] = text.split(".");
  if (fraction.length > asset.decimals) {
    throw new ApiError(400, "INVALID_PARAMETER", `${asset.symbol} has ${asset.decimals} decimals; ${text} has more`, "quantity");
  }
  return BigInt(whole + fraction.padEnd(asset.decimals, "0"));
}

/** The contract's error body as an `ApiError`. */
function refusal(status: number, answer: unknown): ApiError {
  const error = (answer as { error?: { code?: string; message?: string; field?: string | null } } | null)?.error ?? {};
  return new ApiError(status, error.code ?? "ERROR", error.message ?? `HTTP ${status}`, error.field ?? null);
}

/** The highest subaccount number (contract version 5). */
export const MAX_SUBACCOUNT = 1_000;

/** The address of `owner`'s subaccount `number`: the last 20 bytes of
 * `keccak256(abi.encode(owner, uint32(number)))`; number 0 is the owner itself. */
export function subaccountAddress(owner: string, number: number): string {
  if (number === 0) return getAddress(owner);
  const encoded = encodeAbiParameters([{ type: "address" }, { type: "uint32" }], [getAddress(owner), number]);
  return getAddress(slice(keccak256(encoded), 12));
}

export class DexdClient {
  readonly baseUrl: string;
  readonly chainId: string;
  private readonly signer?: Signer;
  private readonly actingFor?: string;
  /** The subaccount the client is bound to (0: the account itself). */
  readonly subaccount: number;
  private readonly fetcher: typeof fetch;
  private readonly verifyingContract?: string;
  private eip712Types?: Promise<Eip712>;
  private assetsAnswer?: Promise<{ assets: Asset[]; custody: Custody }>;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/$/, "");
    this.chainId = options.chainId;
    this.signer = options.signer;
    this.actingFor = options.account;
    this.subaccount = options.subaccount ?? 0;
    this.verifyingContract = options.verifyingContract;
    if (!Number.isInteger(this.subaccount) || this.subaccount < 0 || this.subaccount > MAX_SUBACCOUNT) {
      throw new Error(`subaccount is 0 (the account itself) to ${MAX_SUBACCOUNT}`);
    }
    // Called on its own, never as this client's method: a browser's fetch refuses any `this` but
    // the window ("Illegal invocation").
    this.fetcher = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** The address the client trades and reads as: its subaccount's when bound to one (undefined
   * for a client without a signer or account). */
  get address(): string | undefined {
    const owner = this.owner;
    return owner === undefined ? undefined : subaccountAddress(owner, this.subaccount);
  }

  /** The owner (number 0): who deposits, withdraws and transfers. */
  get owner(): string | undefined {
    return this.actingFor ?? this.signer?.address;
  }

  /** A stream of this client's chain whose `orders` and `balances` subscriptions are the
   * client's address (its subaccount's, when bound to one) unless they name another. */
  stream(options: Omit<StreamOptions, "baseUrl" | "chainId" | "account"> = {}): DexdStream {
    return new DexdStream({ ...options, baseUrl: this.baseUrl, chainId: this.chainId, account: this.address });
  }

  // -- plumbing ------------------------------------------------------------------------------

  /** One call: the decoded JSON answer, or the contract's error as an `ApiError`. */
  async request<T>(method: "GET" | "POST", path: string, query: Query = {}, body?: Record<string, unknown>): Promise<T> {
    const response = await this.send(method, path, query, body);
    let answer: unknown;
    try {
      answer = await response.json();
    } catch {
      throw new ApiError(response.status, "UNREADABLE", `${method} ${path} answered ${response.status} without JSON`, null);
    }
    if (!response.ok) throw refusal(response.status, answer);
    return answer as T;
  }

  /** A GET of this chain answered with text (JSON lines, CSV): the response and its text, or
   * the contract's error as an `ApiError`. */
  private async text(path: string, query: Query): Promise<{ response: Response; text: string }> {
    const response = await this.send("GET", path, { chainId: this.chainId, ...query });
    const text = await response.text();
    if (!response.ok) {
      let answer: unknown = {};
      try {
        answer = JSON.parse(text);
      } catch {
        // Not the contract's error body: the status says enough.
      }
      throw refusal(response.status, answer);
    }
    return { response, text };
  }

  /** A GET answered with JSON lines (`application/x-ndjson`): the response and its lines. */
  private async lines<T>(path: string, query: Query): Promise<{ response: Response; lines: T[] }> {
    const { response, text } = await this.text(path, query);
    try {
      return { response, lines: text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line) as T) };
    } catch {
      throw new ApiError(response.status, "UNREADABLE", `GET ${path} answered a line that is not JSON`, null);
    }
  }

  private async send(method: "GET" | "POST", path: string, query: Query, body?: Record<string, unknown>): Promise<Response> {
    const parameters = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) parameters.set(name, String(value));
    }
    const url = `${this.baseUrl}${path}${parameters.size ? `?${parameters}` : ""}`;
    let response: Response;
    try {
      response = await this.fetcher(url, {
        method,
        headers: { accept: "application/json", ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    } catch {
      throw new ApiError(0, "UNREACHABLE", `${method} ${path}: the server cannot be reached`, null);
    }
    return response;
  }

  private get<T>(path: string, query: Query = {}): Promise<T> {
    return this.request<T>("GET", path, { chainId: this.chainId, ...query });
  }

  private ownerAccount(): string {
    const owner = this.owner;
    if (!owner) throw new Error("no account: make the client with a signer");
    return owner;
  }

  private account(account?: string): string {
    const chosen = account ?? this.address;
    if (!chosen) throw new Error("no account: give one, or make the client with a signer");
    return chosen;
  }

  /** Signs `message` as `primaryType` and posts it with `body`: as the client's address, or
   * `asOwner` (funds move only by the owner). */
  private async signedPost<T>(path: string, primaryType: string, message: Record<string, unknown>, body: Record<string, unknown>, asOwner = false): Promise<T> {
    if (!this.signer) throw new Error("this client has no signer: make it with one to write");
    const account = asOwner ? this.ownerAccount() : this.account();
    const signed = await signRequest(this.signer, account, await this.eip712(), primaryType, message);
    return this.request<T>("POST", path, {}, { chainId: this.chainId, ...body, ...signed });
  }

  /**
   * The chain's EIP-712 domain and request types: read once, checked against the compiled-in
   * domain and types and pinned to this client's chain and venue contract (`pinnedEip712`);
   * a venue that publishes another is refused (`SigningRefused`) and nothing is signed.
   */
  eip712(): Promise<Eip712> {
    this.eip712Types ??= this.get<Eip712>("/account/eip712").then((published) =>
      pinnedEip712(published, this.chainId, this.verifyingContract),
    );
    // A refusal is not held: the next write asks again (and is refused again by a lying venue).
    this.eip712Types.catch(() => {
      this.eip712Types = undefined;
    });
    return this.eip712Types;
  }

  // -- reads ---------------------------------------------------------------------------------

  async chains(): Promise<Chain[]> {
    return (await this.request<{ chains: Chain[] }>("GET", "/chains")).chains;
  }

  /** The chain's assets and how it keeps them (read once). */
  assetsInfo(): Promise<{ assets: Asset[]; custody: Custody }> {
    this.assetsAnswer ??= this.get<{ assets: Asset[]; custody: Custody }>("/account/assetsInfo");
    return this.assetsAnswer;
  }

  async assets(): Promise<Asset[]> {
    return (await this.assetsInfo()).assets;
  }

  async pairs(): Promise<Pair[]> {
    return (await this.get<{ pairs: Pair[] }>("/account/assetPairs")).pairs;
  }

  /** Both sides of a pair's book, best first, read at one sequence or refused. */
  async orderBook(pair: string, depth = 50): Promise<OrderBook> {
    const [bids, asks] = await Promise.all([
      this.get<{ levels: OrderBook["bids"]; sequence: number }>("/order/buyOrderbooks", { pair, depth }),
      this.get<{ levels: OrderBook["asks"]; sequence: number }>("/order/sellOrderbooks", { pair, depth }),
    ]);
    return { symbol: pair, bids: bids.levels, asks: asks.levels, sequence: Math.max(bids.sequence, asks.sequence) };
  }

  async trades(pair: string, limit?: number): Promise<Trade[]> {
    return (await this.get<{ trades: Trade[] }>("/order/tradeHistories", { pair, limit })).trades;
  }

  /** Candles oldest first, within `range` (ms, inclusive) when given. */
  async candles(pair: string, interval = "1m", limit?: number, range: { startTime?: number; endTime?: number } = {}): Promise<Candle[]> {
    const query = { pair, interval, limit, startTime: range.startTime, endTime: range.endTime };
    return (await this.get<{ candles: Candle[] }>("/order/tradesOHCL", query)).candles;
  }

  /**
   * A page of a pair's candles paging forward from `from` (ms; oldest first), with the cursor of
   * the next page while more remain: the whole history, from the first trade.
   */
  async candlePage(pair: string, interval = "1m", page: { from?: number; to?: number; limit?: number; cursor?: string } = {}): Promise<{ candles: Candle[]; nextCursor: string | null }> {
    const query = { pair, interval, from: page.from ?? 0, to: page.to, limit: page.limit, cursor: page.cursor };
    return this.get<{ candles: Candle[]; nextCursor: string | null }>("/order/tradesOHCL", query);
  }

  /** Every trade of a pair within `[from, to]` (ms) as CSV text, the header first, oldest first. */
  async tradesCsv(pair: string, range: { from?: number; to?: number } = {}): Promise<string> {
    return (await this.text("/market/trades.csv", { pair, from: range.from, to: range.to })).text;
  }

  async balances(account?: string): Promise<Balance[]> {
    return (await this.get<{ balances: Balance[] }>("/account/assetBalances", { account: this.account(account) })).balances;
  }

  async openOrders(symbol?: string, account?: string): Promise<Order[]> {
    return (await this.get<{ orders: Order[] }>("/order/openOrders", { account: this.account(account), symbol })).orders;
  }

  async filledOrders(symbol?: string, account?: string, list?: ListOptions): Promise<Order[]> {
    const query = { account: this.account(account), symbol, ...listQuery(list) };
    return (await this.get<{ orders: Order[] }>("/order/filledOrders", query)).orders;
  }

  async cancelledOrders(symbol?: string, account?: string, list?: ListOptions): Promise<Order[]> {
    const query = { account: this.account(account), symbol, ...listQuery(list) };
    return (await this.get<{ orders: Order[] }>("/order/cancelledOrders", query)).orders;
  }

  async order(orderId: string): Promise<Order> {
    return (await this.orderDetail(orderId)).order;
  }

  /** An order with the typed data signed for it, and its batch's proof if it was signed in one. */
  orderDetail(orderId: string): Promise<OrderDetail> {
    return this.get<OrderDetail>("/order/orderDetail", { orderId });
  }

  /** The account's own fills, newest first (of `pair`, or of every pair). */
  async accountTrades(pair?: string, account?: string, list?: ListOptions): Promise<AccountTrade[]> {
    const query = { account: this.account(account), pair, ...listQuery(list) };
    return (await this.get<{ trades: AccountTrade[] }>("/order/accountTrades", query)).trades;
  }

  /** The account's position on `pair` (average-cost accounting) and its open orders there. */
  async position(pair: string, account?: string): Promise<{ position: Position; openOrders: Order[] }> {
    return this.get("/order/openPositions", { pair, account: this.account(account) });
  }

  /** How much the account can buy and sell now, per pair. */
  async tradable(account?: string): Promise<Tradable[]> {
    return (await this.get<{ tradable: Tradable[] }>("/account/tradableAmounts", { account: this.account(account) })).tradable;
  }

  async deposits(account?: string, list?: ListOptions): Promise<Transfer[]> {
    return (await this.get<{ deposits: Transfer[] }>("/portfolio/depositHistories", { account: this.account(account), ...listQuery(list) })).deposits;
  }

  async withdrawals(account?: string, list?: ListOptions): Promise<ListedWithdrawal[]> {
    const query = { account: this.account(account), ...listQuery(list) };
    return (await this.get<{ withdrawals: ListedWithdrawal[] }>("/portfolio/withdrawHistories", query)).withdrawals;
  }

  /** The account's agents that have not ended. */
  async agents(account?: string): Promise<Agent[]> {
    return (await this.get<{ agents: Agent[] }>("/account/agents", { account: this.account(account) })).agents;
  }

  /** The account's budget of writes and open orders, on the node asked. */
  rateLimits(account?: string): Promise<RateLimits> {
    return this.get("/account/rateLimits", { account: this.account(account) });
  }

  // -- custody, liabilities and the public audit log ----------------------------------------

  /** Per asset, what the vault holds against what the venue owes (in ledger mode, owed only). */
  reserves(): Promise<Reserves> {
    return this.get("/account/reserves");
  }

  /** The custody's state: roots, freeze, whether withdrawals are stopped and why. */
  custody(): Promise<CustodyState> {
    return this.get("/account/custody");
  }

  /** The vault's liability roots, newest first. */
  async liabilityRoots(list?: ListOptions): Promise<LiabilityRoot[]> {
    return (await this.get<{ roots: LiabilityRoot[] }>("/account/liabilityRoots", listQuery(list))).roots;
  }

  /** The account's leaves of a root (the newest of the venue's by default), each with its exit call. */
  liabilityProof(account?: string, epoch?: number): Promise<LiabilityProof> {
    return this.get("/account/liabilityProof", { account: this.account(account), epoch });
  }

  /** Every leaf of root `epoch`, by account: enough to rebuild the tree and check it. */
  async liabilityLeaves(epoch: number): Promise<LiabilityLeaf[]> {
    return (await this.lines<LiabilityLeaf>("/account/liabilityLeaves", { epoch })).lines;
  }

  /** Every root the vault holds, oldest first, with where its leaves are read (read a page of
   * 1,000 at a time, following `next`). */
  async auditRoots(): Promise<LiabilityRoot[]> {
    const roots: LiabilityRoot[] = [];
    let from: number | null = 0;
    while (from !== null) {
      const page: { roots: LiabilityRoot[]; next: number | null } = await this.get("/audit/roots", { from });
      roots.push(...page.roots);
      from = page.next;
    }
    return roots;
  }

  /** A page of the public journal from position `from` (1 by default), as docs/audit.md says it. */
  async auditJournal(from?: number, limit?: number): Promise<JournalPage> {
    const { response, lines } = await this.lines<JournalLine>("/audit/journal", { from, limit });
    const end = response.headers.get("x-dexd-journal-end");
    return { lines, formatVersion: response.headers.get("x-dexd-journal-format"), end: end === null ? null : Number(end) };
  }

  // -- writes, signed here -------------------------------------------------------------------

  private orderTerms(terms: OrderTerms): { message: Record<string, unknown>; body: Record<string, unknown> } {
    const type = terms.type ?? (terms.price === undefined ? "market" : "limit");
    const timeInForce = terms.timeInForce ?? (type === "market" ? "IOC" : "GTC");
    const symbol = terms.symbol.toUpperCase();
    const price = terms.price === undefined ? "" : canonicalDecimal(terms.price);
    const amount = canonicalDecimal(terms.amount);
    const message = {
      symbol, orderType: type, direction: terms.direction, timeInForce, postOnly: terms.postOnly ?? false,
      price, amount, clientOrderId: terms.clientOrderId ?? "",
      triggerPrice: terms.triggerPrice === undefined ? "" : canonicalDecimal(terms.triggerPrice),
      triggerCondition: terms.triggerCondition ?? "", ocoGroup: terms.ocoGroup ?? "", expiresAt: BigInt(terms.expiresAt ?? 0),
    };
    const body: Record<string, unknown> = { symbol, type, direction: terms.direction, amount, timeInForce, postOnly: message.postOnly };
    if (price) body.price = price;
    if (terms.clientOrderId) body.clientOrderId = terms.clientOrderId;
    if (message.triggerPrice) body.triggerPrice = message.triggerPrice;
    if (terms.triggerCondition) body.triggerCondition = terms.triggerCondition;
    if (terms.ocoGroup) body.ocoGroup = terms.ocoGroup;
    if (terms.expiresAt) body.expiresAt = terms.expiresAt;
    return { message, body };
  }

  /** Places an order; the order and the trades it made on arrival. */
  addOrder(terms: OrderTerms): Promise<Placed> {
    const { message, body } = this.orderTerms(terms);
    return this.signedPost<Placed>("/order/addOrder", "Order", message, body);
  }

  /**
   * Places 1 to 50 orders of one pair in one journaled step, signed once (an `OrderBatch`); a
   * result per order (one refused order refuses no other).
   */
  async batchOrders(orders: OrderTerms[]): Promise<BatchResult[]> {
    if (!this.signer) throw new Error("this client has no signer: make it with one to write");
    const eip712 = await this.eip712();
    const terms = orders.map((order) => this.orderTerms(order));
    const signed = await signBatch(this.signer, this.account(), eip712, terms.map(({ message }) => message));
    const items = terms.map(({ body }) => body);
    const answer = await this.request<{ results: BatchResult[] }>("POST", "/order/batchOrders", {}, { chainId: this.chainId, ...signed, orders: items });
    return answer.results;
  }

  async cancelOrder(symbol: string, orderId: string): Promise<Order> {
    const message = { symbol: symbol.toUpperCase(), orderId };
    return (await this.signedPost<{ order: Order }>("/order/cancelOrder", "CancelOrder", message, message)).order;
  }

  /** Cancels every open order of the account on the chain, or on `symbol`. */
  async cancelAll(symbol?: string): Promise<Order[]> {
    const pair = symbol ? symbol.toUpperCase() : "";
    const answer = await this.signedPost<{ orders: Order[] }>("/order/cancelAll", "CancelAll", { symbol: pair }, pair ? { symbol: pair } : {});
    return answer.orders;
  }

  /** Replaces an open order by one with a new price and/or amount in one step; the new order. */
  async amendOrder(symbol: string, orderId: string, change: { price?: string | number; amount?: string | number }): Promise<Order> {
    if (change.price === undefined && change.amount === undefined) throw new Error("give a price, an amount or both");
    const message = {
      symbol: symbol.toUpperCase(), orderId,
      price: change.price === undefined ? "" : canonicalDecimal(change.price),
      amount: change.amount === undefined ? "" : canonicalDecimal(change.amount),
    };
    const body: Record<string, unknown> = { symbol: message.symbol, orderId };
    if (message.price) body.price = message.price;
    if (message.amount) body.amount = message.amount;
    return (await this.signedPost<{ order: Order }>("/order/amendOrder", "AmendOrder", message, body)).order;
  }

  /** Arms the dead man's switch (5,000 to 86,400,000 ms; 0 turns it off); the trigger time. */
  async cancelAllAfter(timeoutMs: number): Promise<number | null> {
    const answer = await this.signedPost<{ triggerAt: number | null }>("/order/cancelAllAfter", "CancelAllAfter", { timeoutMs }, { timeoutMs });
    return answer.triggerAt;
  }

  /** A ledger-mode deposit (on a vault chain, send tokens to the vault from a wallet instead). */
  async deposit(symbol: string, quantity: string | number): Promise<{ deposit: Transfer; balance: Balance }> {
    const message = { symbol: symbol.toUpperCase(), quantity: canonicalDecimal(quantity) };
    return this.signedPost("/portfolio/deposit", "Deposit", message, { from: this.ownerAccount(), ...message }, true);
  }

  /** A withdrawal; on a vault chain signed as the vault's own `Withdrawal`. */
  async withdraw(symbol: string, quantity: string | number): Promise<{ withdrawal: Transfer; balance: Balance }> {
    const asset = (await this.assets()).find((item) => item.symbol === symbol.toUpperCase());
    if (!asset) throw new ApiError(404, "UNKNOWN_ASSET", `no asset ${symbol} on chain ${this.chainId}`, "symbol");
    const text = canonicalDecimal(quantity);
    const body = { from: this.ownerAccount(), symbol: asset.symbol, quantity: text };
    if ((await this.eip712()).primaryTypes.withdraw === "Withdrawal") {
      const units = unitsOf(asset, text);
      const token = asset.address ?? "0x0000000000000000000000000000000000000000";
      return this.signedPost("/portfolio/withdraw", "Withdrawal", { token, amount: units }, body, true);
    }
    return this.signedPost("/portfolio/withdraw", "Withdraw", { symbol: asset.symbol, quantity: text }, body, true);
  }

  // -- subaccounts (contract version 5) ------------------------------------------------------

  /**
   * Moves available funds between two of the owner's subaccounts (0, the owner, to 1,000), signed
   * by the owner. Sent again with the same `clientTransferId` (a fresh one is made when left out),
   * it answers the first result and moves nothing again.
   */
  async transfer(symbol: string, quantity: string | number, fromSubaccount: number, toSubaccount: number, clientTransferId?: string): Promise<SubaccountTransfer> {
    const message = {
      fromSubaccount, toSubaccount, symbol: symbol.toUpperCase(), quantity: canonicalDecimal(quantity),
      clientTransferId: clientTransferId ?? `ts-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`,
    };
    const body = { from: this.ownerAccount(), ...message };
    return (await this.signedPost<{ transfer: SubaccountTransfer }>("/account/transfer", "Transfer", message, body, true)).transfer;
  }

  /** The owner's transfers between its subaccounts, newest first (with `subaccount`, only those from or to it). */
  async transfers(subaccount?: number, list?: ListOptions): Promise<SubaccountTransfer[]> {
    const query = { account: this.ownerAccount(), subaccount, ...listQuery(list) };
    return (await this.get<{ transfers: SubaccountTransfer[] }>("/account/transfers", query)).transfers;
  }

  /** The owner and its subaccounts that ever received funds, with addresses, open orders and balances. */
  async subaccounts(): Promise<Subaccount[]> {
    return (await this.get<{ subaccounts: Subaccount[] }>("/account/subaccounts", { account: this.ownerAccount() })).subaccounts;
  }

  /**
   * Asks the vault itself for a withdrawal of `quantity` of `symbol`, sent by `wallet` (a viem
   * wallet client of the account: the vault pays whoever sends it), when the venue does not
   * answer or refuses. The venue must serve it within the vault's request period, or anyone may
   * freeze the vault. Returns the transaction's hash; the withdrawal history lists it with
   * `requested: "chain"` once the venue has seen it.
   */
  async requestWithdrawalOnChain(wallet: TransactionSender, symbol: string, quantity: string | number): Promise<Hash> {
    const { assets, custody } = await this.assetsInfo();
    if (custody.mode !== "vault") {
      throw new ApiError(400, "INVALID_PARAMETER", `chain ${this.chainId} has no vault: ledger chains take no request on chain`, "chainId");
    }
    const asset = assets.find((item) => item.symbol === symbol.toUpperCase());
    if (!asset) throw new ApiError(404, "UNKNOWN_ASSET", `no asset ${symbol} on chain ${this.chainId}`, "symbol");
    const units = unitsOf(asset, canonicalDecimal(quantity));
    return requestWithdrawal(wallet, custody.vault as Address, (asset.address ?? NATIVE_TOKEN) as Address, units);
  }

  /**
   * Starts a TWAP (contract version 5): every `intervalMs` (30,000 to 3,600,000, dividing
   * `durationMs`, 300,000 to 86,400,000) the venue places an immediate-or-cancel slice of what
   * remains over the slices left, at `limitPrice` or within 3 % of the best price. Sent again with
   * the same `clientTwapId` (a fresh one is made when left out), the same TWAP is the answer.
   */
  async addTwap(terms: TwapTerms): Promise<Twap> {
    const message = {
      symbol: terms.symbol.toUpperCase(), direction: terms.direction, amount: canonicalDecimal(terms.amount),
      durationMs: terms.durationMs, intervalMs: terms.intervalMs,
      limitPrice: terms.limitPrice === undefined ? "" : canonicalDecimal(terms.limitPrice),
      clientTwapId: terms.clientTwapId ?? `ts-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`,
    };
    const body = Object.fromEntries(Object.entries(message).filter(([, value]) => value !== ""));
    return (await this.signedPost<{ twap: Twap }>("/order/addTwap", "Twap", message, body)).twap;
  }

  /** Cancels a running TWAP of the account: no slice is placed after it. */
  async cancelTwap(twapId: string): Promise<Twap> {
    return (await this.signedPost<{ twap: Twap }>("/order/cancelTwap", "CancelTwap", { twapId: BigInt(twapId) }, { twapId })).twap;
  }

  /** The account's running TWAPs, then its last 20 finished ones, newest first. */
  async twaps(account?: string): Promise<Twap[]> {
    return (await this.get<{ twaps: Twap[] }>("/order/twaps", { account: this.account(account) })).twaps;
  }

  /** Approves `agent` (an address) to trade, never to move funds, for the account. */
  async approveAgent(agent: string, name: string, validUntilMs?: number): Promise<Agent> {
    const body: Record<string, unknown> = { agent, name };
    if (validUntilMs) body.validUntil = validUntilMs;
    const answer = await this.signedPost<{ agent: Agent }>("/account/approveAgent", "ApproveAgent", { agent, name, validUntil: validUntilMs ?? 0 }, body);
    return answer.agent;
  }

  async revokeAgent(agent: string): Promise<void> {
    await this.signedPost("/account/revokeAgent", "RevokeAgent", { agent }, { agent });
  }
}

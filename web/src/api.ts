//! The page's way to the dexd that serves it: the TypeScript client (clients/typescript,
//! `@dexd/client`), so the page has no request or stream protocol code of its own. A reader per
//! call for the market's and an account's views, a writer per signer and chain, which keeps the
//! chain's EIP-712 types between writes, and one stream. Every error is the client's `ApiError`,
//! with the contract's code and message, so the page can show the server's own words. This
//! module knows nothing of the page's views.

import {
  ApiError, DexdClient, DexdStream, subaccountAddress, type Asset, type Chain, type Custody, type Pair,
  type Signer as ClientSigner, type StreamOptions,
} from "../../clients/typescript/src/index";

export { ApiError, subaccountAddress };
export type {
  BalancesMessage, BookMessage, DexdStream, OrdersMessage, StreamBook, StreamStatus, SubscriptionEvent, TradesMessage,
} from "../../clients/typescript/src/index";
export type {
  AccountTrade, Agent, Asset, Balance, Candle, Chain, Custody, Level, LiabilityProof, Order, Pair, Position,
  ProofLeaf, Reserve, Subaccount, SubaccountTransfer, Tradable, Trade, Transfer, Twap,
} from "../../clients/typescript/src/index";

/** What signs for an account on the page: a wallet, a pasted key, or a session key (an agent). */
export interface Signer {
  /** The account's EIP-55 address: whose orders and funds these are. */
  readonly address: string;
  /** How it signs, in words the page shows. */
  readonly description: string;
  readonly kind: "wallet" | "key";
  /** What signs each request: the account's own key or wallet, or its agent's key. */
  readonly signing: ClientSigner;
}

/**
 * The page's one WebSocket (`/ws`), the client's `DexdStream`: every subscription names its chain,
 * and the stream keeps them across reconnects and takes a book again after a gap or a bad
 * checksum.
 */
export function openStream(events: Pick<StreamOptions, "onStatus" | "onReconnected" | "onResync" | "onMessage">): DexdStream {
  return new DexdStream({ baseUrl: location.origin, chainId: "", initialBackoffMs: STREAM_FIRST_BACKOFF_MS, ...events });
}

/** The stream's first wait after a lost connection (doubled up to the client's 10 s). */
const STREAM_FIRST_BACKOFF_MS = 500;

/** A client of `chainId` that reads only. */
export function reader(chainId: string): DexdClient {
  return new DexdClient({ baseUrl: location.origin, chainId });
}

/** A client of `chainId` that reads `owner`'s subaccounts and transfers. */
export function ownerReader(chainId: string, owner: string): DexdClient {
  return new DexdClient({ baseUrl: location.origin, chainId, account: owner });
}

/** The venue's chains: the one read that names no chain (the client's chain is left empty). */
export function chains(): Promise<Chain[]> {
  return reader("").chains();
}

const writers = new WeakMap<Signer, Map<string, DexdClient>>();

/** The client that signs `signer`'s requests on `chainId` (one per signer and chain). */
export function writer(chainId: string, signer: Signer): DexdClient {
  let byChain = writers.get(signer);
  if (!byChain) writers.set(signer, (byChain = new Map()));
  let client = byChain.get(chainId);
  if (!client) {
    client = new DexdClient({ baseUrl: location.origin, chainId, signer: signer.signing, account: signer.address });
    byChain.set(chainId, client);
  }
  return client;
}

/** When a vault chain credits a deposit, in words. */
export function creditedWhen(custody: { confirmations: number | "finalized" }): string {
  return custody.confirmations === "finalized"
    ? "once its block is finalized"
    : `after ${custody.confirmations} confirmations`;
}

/** What the account's views of one chain and pair need. */
export interface Venue {
  chainId: string;
  pair: Pair;
  assets: Asset[];
  custody: Custody;
}

/** An error in words for the page: the contract's message with its code ("… (NO_LIQUIDITY)"). */
export function describe(error: unknown): string {
  return error instanceof ApiError ? `${error.message} (${error.code})` : (error as Error).message;
}

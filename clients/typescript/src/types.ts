/** The contract's objects (shared/CONTRACT.md, "Objects"), as the server sends them. */

export interface Level { price: string; amount: string; orders: number }
export interface Trade {
  tradeId: string; chainId: string; symbol: string; price: string; amount: string; cost: string;
  takerDirection: "buy" | "sell"; makerOrderId: string; takerOrderId: string; timestamp: number;
}
export interface Order {
  orderId: string; clientOrderId: string | null; chainId: string; account: string; symbol: string;
  type: "limit" | "market"; direction: "buy" | "sell"; timeInForce: "GTC" | "IOC" | "FOK"; postOnly: boolean;
  price: string | null; amount: string; filled: string; remaining: string; cost: string; average: string | null;
  fee: string; feeAsset: string; status: "open" | "filled" | "cancelled" | "untriggered";
  /** Why it was cancelled (null unless it was). */
  cancelReason: "user" | "selfTrade" | "unfilled" | "switch" | "oco" | "expired" | null;
  /** A trigger order's trigger (null for an order without one). */
  triggerPrice: string | null; triggerCondition: "above" | "below" | null;
  /** Its one-cancels-other group, and when it expires (ms), or null. */
  ocoGroup: string | null; expiresAt: number | null;
  /** The TWAP this order is a slice of (null for any other order). */
  twapId: string | null;
  timestamp: number; updatedAt: number;
  signature: string;
}
export interface Balance { symbol: string; total: string; available: string; locked: string }
export interface Transfer {
  id: string; chainId: string; account: string; symbol: string; quantity: string;
  status: "pending" | "sent" | "confirmed" | "failed"; txHash: string | null; blockNumber: number | null;
  timestamp: number; updatedAt: number;
}
/**
 * A withdrawal as the history lists it: what a pending one waits for, from when it is payable
 * (ms), and how it was asked for (signed through the API, or with the vault's requestWithdrawal
 * on chain, then with the vault's number of the request).
 */
export interface ListedWithdrawal extends Transfer {
  waitingFor?: "root" | "challenge" | "payment" | "confirmations" | null;
  payableAfter?: number | null;
  requested?: "api" | "chain";
  requestId?: number | null;
}
export interface Candle {
  openTime: number; open: string; high: string; low: string; close: string; volume: string;
  quoteVolume: string; trades: number;
}
export interface Asset { symbol: string; name: string; decimals: number; address: string | null; native: boolean }
/** A raise of a pair's fees the venue announced, in force from `effectiveAt` (ms). */
export interface FeeRaise { makerFee: string; takerFee: string; effectiveAt: number }
/** A pair: its rules, the fees in force now, and a raise announced for later, if any. */
export interface Pair {
  symbol: string; base: string; quote: string; tickSize: string; stepSize: string; minAmount: string;
  minNotional: string; makerFee: string; takerFee: string; feeRaise: FeeRaise | null; lastPrice: string | null;
  /** The operator halted the pair: it takes cancels only. */
  halted: boolean;
}
export interface Chain { chainId: string; name: string; custody: "ledger" | "vault" }
export interface OrderBook { symbol: string; bids: Level[]; asks: Level[]; sequence: number }
export interface Eip712 {
  domain: { name: string; version: string; chainId: number; verifyingContract: string };
  types: Record<string, { name: string; type: string }[]>;
  primaryTypes: Record<string, string>;
  maxLifetimeMs: number;
  minWithdrawalLifetimeMs?: number;
  maxWithdrawalLifetimeMs?: number;
}
/** An order placed, and the trades it made on arrival. */
export interface Placed { order: Order; trades: Trade[] }
/** One result of a batch: the order placed, or why that one was refused. */
export type BatchResult = Placed | { error: { code: string; message: string; field: string | null } };
/**
 * What ties an order of a batch signed once (contract version 4) to the batch's one signature:
 * the order's struct hash is `orderHashes[index]`, and `signature` recovers over `digest` to the
 * account or an agent it approved.
 */
export interface BatchProof {
  primaryType: "OrderBatch";
  encodedType: string;
  index: number;
  orderHashes: string[];
  account: string;
  nonce: string;
  expiry: number;
  digest: string;
  signature: string;
}
/** An order with what was signed for it (`GET /order/orderDetail`). */
export interface OrderDetail { order: Order; typedData: Record<string, unknown>; batch?: BatchProof }
/** A list's page and time window (shared/CONTRACT.md, "Lists"): newest first. */
export interface ListOptions { limit?: number; cursor?: string; startTime?: number; endTime?: number }
/** One of the account's own fills (`GET /order/accountTrades`). */
export interface AccountTrade extends Trade { orderId: string; role: "maker" | "taker"; fee: string; feeAsset: string }
export interface Position {
  netAmount: string; averageEntryPrice: string; markPrice: string | null; realizedPnl: string; unrealizedPnl: string;
  base: Balance; quote: Balance;
}
export interface Tradable { symbol: string; buy: { maxAmount: string; maxCost: string }; sell: { maxAmount: string } }
/** How a chain keeps funds: the ledger alone, or a vault contract on chain. */
export type Custody =
  | { mode: "ledger" }
  | {
    mode: "vault"; vault: string; operator: string; confirmations: number | "finalized";
    crediting: "running" | "halted"; haltReason: string | null;
    /** Whether the vault (version 2) is frozen: it pays exits only. */
    frozen?: boolean;
  };
/** What the vault holds of an asset against what the venue owes (`GET /account/reserves`). */
export interface Reserve { symbol: string; onChain: string | null; liabilities: string; pendingWithdrawals: string; surplus: string | null }
export interface Reserves { custody: Custody; assets: Reserve[]; blockNumber: number | null; readAt: number }
/** A key an account approved to trade for it, never to move funds. */
export interface Agent { agent: string; name: string; validUntil: number | null; approvedAt: number }
export interface RateLimits { writesPerSecond: number; writesUsed: number; resetAt: number; openOrders: number; maxOpenOrders: number }
/** A root's total of one token: every balance plus every withdrawal debited and not yet paid. */
export interface RootTotal { symbol: string; token: string; total: string }
/** A liability root the vault holds (`GET /account/liabilityRoots`, `GET /audit/roots`). */
export interface LiabilityRoot {
  epoch: number; root: string; journalSequence: number; depositCount: number; txHash: string; blockNumber: number;
  committedAt: number; finalAfter: number; origin: "venue" | "foreign"; standing: "challengeable" | "vetoed" | "final";
  totals: RootTotal[];
  /** `GET /audit/roots` only: where the root's leaves are read on this venue. */
  leaves?: string;
}
/** An account's leaf of one token, with its proof and the vault call that exits it. */
export interface ProofLeaf {
  symbol: string; token: string; balance: string; creditedDeposits: string; debitedWithdrawals: string;
  proof: string[]; exitCalldata: string;
}
export interface LiabilityProof {
  account: string; epoch: number; root: string; journalSequence: number; depositCount: number; txHash: string;
  committedAt: number; standing: LiabilityRoot["standing"]; leaves: ProofLeaf[];
}
/** One leaf of a root, as `GET /account/liabilityLeaves` streams them. */
export interface LiabilityLeaf {
  account: string; symbol: string; token: string; balance: string; creditedDeposits: string; debitedWithdrawals: string;
}
/** The custody's state on a chain (`GET /account/custody`). */
export interface CustodyState {
  custody: Custody;
  roots: {
    challengePeriodS: number; maxRootAgeS: number; rootIntervalMs: number; withdrawalWaitMs: number;
    newestVenueRoot: number | null; newestFinalRoot: number | null; payableThrough: number | null;
    /** A root the vault holds that the venue did not make, until it is resolved. */
    foreignRoot: { epoch: number; root: string; journalSequence: number; txHash: string; standing: LiabilityRoot["standing"] } | null;
  } | null;
  frozen: boolean; exitEpoch: number | null;
  /** Why withdrawals are not paid now, in words; null while they are. */
  withdrawalsStopped: string | null;
  status: { headBlock: number | null; scannedBlock: number | null; nodeError: string | null; halted: string | null; payerError: string | null };
}
/**
 * A line of the public journal (`GET /audit/journal`, docs/audit.md, format version 1): a command
 * with what authorised it, or a state hash after a position.
 */
export type JournalLine =
  | {
    sequence: number; time: number; command: Record<string, unknown>; authorization: Record<string, unknown>;
    /** The command's journal bytes, hex. */
    encoded: string;
  }
  | { sequence: number; stateHash: string };
/** A page of the public journal and where the journal ends now. */
export interface JournalPage { lines: JournalLine[]; formatVersion: string | null; end: number | null }

/** A best bid or ask on the `bbo` channel. */
export interface Top { price: string; amount: string }
/** What every message of a subscription carries: its tag and the parameters that name it. */
interface ChannelMessageBase { id: string | number | null; chainId: string }
/** `book`: a snapshot, then the levels that changed (amount "0": gone), checksummed. */
export interface BookMessage extends ChannelMessageBase {
  channel: "book"; event: "snapshot" | "update"; pair: string; depth?: number;
  bids: Level[]; asks: Level[]; sequence: number; previousSequence?: number; checksum: number;
}
/** `bbo`: the best bid and ask (null for an empty side) whenever either changed. */
export interface BboMessage extends ChannelMessageBase {
  channel: "bbo"; event: "snapshot" | "update"; pair: string; bid: Top | null; ask: Top | null; sequence: number;
}
/** `depth`: the top `levels` of each side whole, at most once per `intervalMs`. */
export interface DepthMessage extends ChannelMessageBase {
  channel: "depth"; event: "snapshot" | "update"; pair: string; levels: 5 | 10 | 20; intervalMs: 100 | 1000;
  bids: Level[]; asks: Level[]; sequence: number; checksum: number;
}
export interface TradesMessage extends ChannelMessageBase { channel: "trades"; event: "update"; pair: string; trades: Trade[] }
export interface CandlesMessage extends ChannelMessageBase {
  channel: "candles"; event: "update"; pair: string; interval: string; candle: Candle;
}
export interface OrdersMessage extends ChannelMessageBase {
  channel: "orders"; event: "snapshot" | "update"; account: string; orders: Order[];
  /** The subaccount's number, when the subscription named one. */
  subaccount?: number;
}
export interface BalancesMessage extends ChannelMessageBase {
  channel: "balances"; event: "snapshot" | "update"; account: string; balances: Balance[]; transfers?: Transfer[];
  /** The subaccount's number, when the subscription named one. */
  subaccount?: number;
}
/** Each channel's messages (docs/streams.md, "Messages of a subscription"). */
export interface ChannelMessages {
  book: BookMessage; bbo: BboMessage; depth: DepthMessage; trades: TradesMessage; candles: CandlesMessage;
  orders: OrdersMessage; balances: BalancesMessage;
}
/** A subscription's answers: made, ended, or refused (or ended: `UNAVAILABLE`). */
export type SubscriptionEvent =
  | { event: "subscribed" | "unsubscribed"; id: string | number | null; channel: string }
  | { event: "error"; id: string | number | null; code: string; message: string; field: string | null };

/** A transfer between two subaccounts of one owner. */
export interface SubaccountTransfer {
  transferId: string;
  clientTransferId: string;
  chainId: string;
  account: string;
  fromSubaccount: number;
  toSubaccount: number;
  from: string;
  to: string;
  symbol: string;
  quantity: string;
  timestamp: number;
}

/** One of an owner's subaccounts (number 0 is the owner). */
export interface Subaccount { subaccount: number; address: string; openOrders: number; balances: Balance[] }

/** A TWAP order (contract version 5): the venue places a slice every `intervalMs`. */
export interface Twap {
  twapId: string;
  clientTwapId: string | null;
  chainId: string;
  account: string;
  symbol: string;
  direction: "buy" | "sell";
  amount: string;
  filled: string;
  remaining: string;
  cost: string;
  average: string | null;
  limitPrice: string | null;
  durationMs: number;
  intervalMs: number;
  status: "running" | "completed" | "cancelled";
  /** Slices run so far, of `slicesPlanned`. */
  slices: number;
  slicesPlanned: number;
  /** When the next slice is due (ms), null unless running. */
  nextSliceAt: number | null;
  startedAt: number;
  endsAt: number;
  updatedAt: number;
}

//! The account: who signs, the order form with its preview, deposits and withdrawals, and the
//! account's views (open orders with cancel, edit and cancel all, order history, fills, balances
//! and the vault's reserves with the account's leaves of the liability root (`liabilities.ts`),
//! position, transfers, agents), and the subaccount the page trades and views as, with the form
//! that moves funds between subaccounts. Orders are signed by the session key when one is in use
//! (`controls.ts`), for the subaccount picked (its address as the signed account); deposits,
//! withdrawals, moves between subaccounts and agents always by the account's own signer. Open orders and balances are live from the stream; the
//! histories are read again whenever the stream says something changed.

import {
  ApiError, creditedWhen, describe, ownerReader, reader, subaccountAddress, writer, type AccountTrade, type Balance, type BalancesMessage, type Custody,
  type DexdStream, type Order, type OrdersMessage, type Position, type Reserve, type Signer, type SubscriptionEvent,
  type Tradable, type Transfer, type Venue,
} from "./api";
import {
  amendOrder, cancelAll, openAmendDialog, renderAgents, revokeAgent, setSwitch, startSession, type Session,
} from "./controls";
import { canonical, multiply, toUnits } from "./decimal";
import { button, dateTime, element, fill, row } from "./dom";
import { depositFromWallet, injectedWallet, keySigner, requestFromWallet, walletSigner } from "./signing";
import { showLiabilities } from "./liabilities";
import { Twaps } from "./twap";

/** Rows of each history shown. */
const HISTORY_ROWS = 50;
/** How often the account's leaves of the newest liability root are looked at again. */
const LIABILITY_RECHECK_MS = 5_000;
/** How long the views wait after a stream message before reading the histories again. */
const REFRESH_DELAY_MS = 150;

export type { Venue } from "./api";

export interface AccountCallbacks {
  announce(text: string): void;
  fail(text: string): void;
  /** The best prices on the book now, for a market order's preview. */
  bestPrices(): { ask: string | null; bid: string | null };
}

export class Account {
  private signer: Signer | null = null;
  /** The session key the account approved, when orders are signed with it. */
  private session: Session | null = null;
  private venue: Venue | null = null;
  private subscriptions: string[] = [];
  private openOrders = new Map<string, Order>();
  private balances = new Map<string, Balance>();
  private tradable: Tradable[] = [];
  private refreshTimer: number | undefined;
  /** The subaccount the page trades and views as (0: the account itself). */
  private subaccount = 0;
  /** Each signer's signer for a subaccount: the same key, the subaccount's address. */
  private readonly subaccountSigners = new WeakMap<Signer, Map<number, Signer>>();
  /** The TWAP form and the account's TWAPs (`twap.ts`). */
  private readonly twaps: Twaps;

  constructor(private readonly stream: DexdStream, private readonly callbacks: AccountCallbacks) {
    this.twaps = new Twaps({ ...callbacks, current: () => ({ venue: this.venue, signer: this.trader() }) });
    // A new root comes without a stream message: the account's leaves are looked at again now
    // and then (checked against the vault only when the root changed).
    window.setInterval(() => {
      if (this.venue && this.signer) void showLiabilities(this.venue, this.signer.address, injectedWallet());
    }, LIABILITY_RECHECK_MS);
    element("connect-wallet").addEventListener("click", () => void this.connectWallet());
    element<HTMLFormElement>("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.useKey();
    });
    element("disconnect").addEventListener("click", () => this.disconnect());
    element<HTMLFormElement>("order-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.placeOrder();
    });
    element<HTMLFormElement>("order-form").addEventListener("input", () => this.preview());
    element<HTMLFormElement>("transfer-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const action = ((event as SubmitEvent).submitter as HTMLButtonElement | null)?.value ?? "deposit";
      void this.transfer(action === "withdraw" || action === "request" ? action : "deposit");
    });
    element("cancel-all").addEventListener("click", () => void this.cancelAll());
    element("start-session").addEventListener("click", () => void this.startSession());
    element("end-session").addEventListener("click", () => this.endSession());
    element<HTMLFormElement>("switch-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.setSwitch();
    });
    element<HTMLInputElement>("subaccount").addEventListener("change", () => this.pickSubaccount());
    element<HTMLFormElement>("subaccount-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.pickSubaccount();
    });
    element<HTMLFormElement>("move-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.moveBetweenSubaccounts();
    });
    element("connect-wallet").hidden = injectedWallet() === null;
    this.renderSigner();
  }

  /** Who signs orders: the session key when one is in use, else the account's own signer; for
   * the subaccount picked, the same key signing as the subaccount's address. */
  private trader(): Signer | null {
    const base = this.session?.signer ?? this.signer;
    if (!base || !this.signer || this.subaccount === 0) return base;
    let bySubaccount = this.subaccountSigners.get(base);
    if (!bySubaccount) this.subaccountSigners.set(base, (bySubaccount = new Map()));
    let signer = bySubaccount.get(this.subaccount);
    if (!signer) {
      signer = {
        ...base,
        address: subaccountAddress(this.signer.address, this.subaccount),
        description: `${base.description}, for subaccount ${this.subaccount}`,
      };
      bySubaccount.set(this.subaccount, signer);
    }
    return signer;
  }

  /** The address the page trades and views as: the account's, or its subaccount's. */
  private viewAddress(): string | null {
    return this.signer ? subaccountAddress(this.signer.address, this.subaccount) : null;
  }

  private pickSubaccount(): void {
    const input = element<HTMLInputElement>("subaccount");
    const number = Number(input.value);
    if (!Number.isInteger(number) || number < 0 || number > 1000) {
      input.value = String(this.subaccount);
      return this.callbacks.fail("A subaccount is a whole number from 0 (the account itself) to 1000.");
    }
    if (number === this.subaccount) return;
    this.subaccount = number;
    this.renderSigner();
    this.callbacks.announce(number === 0 ? "Trading as the account itself." : `Trading as subaccount ${number}, ${this.viewAddress()}.`);
    void this.follow();
  }

  private async moveBetweenSubaccounts(): Promise<void> {
    const venue = this.venue;
    const signer = this.signer;
    if (!venue || !signer) return;
    const from = Number(element<HTMLInputElement>("move-from").value);
    const to = Number(element<HTMLInputElement>("move-to").value);
    const symbol = element<HTMLSelectElement>("move-asset").value;
    const raw = element<HTMLInputElement>("move-quantity").value.trim();
    const quantity = canonical(raw);
    if (!quantity) return this.callbacks.fail(`The quantity "${raw}" is not a positive decimal number.`);
    const button = element<HTMLButtonElement>("move-button");
    button.disabled = true;
    try {
      const moved = await writer(venue.chainId, signer).transfer(symbol, quantity, from, to);
      this.callbacks.announce(`Moved ${moved.quantity} ${moved.symbol} from subaccount ${moved.fromSubaccount} to subaccount ${moved.toSubaccount}.`);
      element<HTMLInputElement>("move-quantity").value = "";
      await this.refresh();
    } catch (error) {
      this.callbacks.fail(`Move refused: ${describe(error)}`);
    } finally {
      button.disabled = false;
    }
  }

  /** A new chain or pair: the account's subscriptions follow it. */
  async show(venue: Venue): Promise<void> {
    this.venue = venue;
    const select = element<HTMLSelectElement>("transfer-asset");
    select.replaceChildren(...venue.assets.map((asset) => new Option(asset.symbol, asset.symbol)));
    element<HTMLSelectElement>("move-asset").replaceChildren(...venue.assets.map((asset) => new Option(asset.symbol, asset.symbol)));
    this.renderVaultHelp();
    this.preview();
    await this.follow();
  }

  private async connectWallet(): Promise<void> {
    const provider = injectedWallet();
    if (!provider) return this.callbacks.fail("No browser wallet was found on this page.");
    try {
      this.signer = await walletSigner(provider);
    } catch (error) {
      return this.callbacks.fail(`The wallet did not connect: ${describe(error)}`);
    }
    this.renderSigner();
    this.callbacks.announce(`Connected ${this.signer.address} through the browser wallet.`);
    await this.follow();
  }

  private useKey(): void {
    const input = element<HTMLInputElement>("private-key");
    try {
      this.signer = keySigner(input.value);
    } catch (error) {
      this.callbacks.fail((error as Error).message);
      return;
    } finally {
      // The field is emptied at once: the key lives on only inside the signer (viem's account object).
      input.value = "";
    }
    this.renderSigner();
    this.callbacks.announce(`Using ${this.signer.address}, signing in this page.`);
    void this.follow();
  }

  private disconnect(): void {
    this.signer = null;
    this.session = null;
    this.subaccount = 0;
    element<HTMLInputElement>("subaccount").value = "0";
    for (const id of this.subscriptions) this.stream.unsubscribe(id);
    this.subscriptions = [];
    this.openOrders.clear();
    this.balances.clear();
    this.tradable = [];
    this.renderSigner();
    this.renderAll();
    this.callbacks.announce("Disconnected; the key is forgotten.");
  }

  private renderSigner(): void {
    const signer = this.signer;
    element("signer-state").textContent = signer
      ? `${signer.address} — signing with ${signer.description}.`
      : "Not connected: reading the market only. Connect a wallet or paste a key to trade.";
    element("key-form").hidden = signer !== null;
    element("connect-wallet").hidden = signer !== null || injectedWallet() === null;
    element("disconnect").hidden = signer === null;
    element("transfer-form").hidden = signer === null;
    element("subaccount-form").hidden = signer === null;
    element("move-form").hidden = signer === null;
    element("subaccount-state").textContent = signer && this.subaccount !== 0
      ? `Orders, balances and history below are subaccount ${this.subaccount}'s (${this.viewAddress()}); ` +
        "deposits and withdrawals stay the account's own."
      : "Orders, balances and history below are the account's own.";
    element<HTMLButtonElement>("place-order").disabled = signer === null;
    this.twaps.enable(signer !== null);
    element<HTMLButtonElement>("cancel-all").disabled = signer === null;
    element<HTMLButtonElement>("arm-switch").disabled = signer === null;
    element<HTMLButtonElement>("start-session").hidden = signer === null || this.session !== null;
    element("end-session").hidden = this.session === null;
    element("session-state").textContent = this.session
      ? `Orders are signed with the session key ${this.session.agent}, which this account approved until ` +
        `${new Date(this.session.validUntil).toLocaleString()}; it can trade, never withdraw.`
      : signer
        ? `Orders are signed by ${signer.description}. A session key signs them without asking each time.`
        : "Connect to manage agents.";
    document.body.dataset.signing = signer?.kind ?? "none";
  }

  private renderVaultHelp(): void {
    const help = element("vault-help");
    const custody = this.venue?.custody;
    // A withdrawal asked of the vault itself goes from the wallet: shown on a vault chain.
    element("request-button").hidden = custody?.mode !== "vault";
    if (custody?.mode === "vault") {
      help.hidden = false;
      help.textContent =
        `This chain keeps funds in the vault ${custody.vault}. A deposit is a transaction from your own wallet: ` +
        `approve the vault for the token, then call deposit(token, amount) (or depositNative() with the value for ` +
        `the native asset). It is credited ${creditedWhen(custody)}. If the venue does not answer or refuses your ` +
        `withdrawal, "Ask the vault" sends requestWithdrawal(token, amount) from your wallet: the venue must pay it ` +
        `within the vault's request period, or anyone may freeze the vault and you exit with your balance.`;
    } else {
      help.hidden = true;
      help.textContent = "";
    }
    this.renderCustodyHalt(custody ?? null);
  }

  /** Says so when the chain's custody has stopped crediting deposits, and why. */
  private renderCustodyHalt(custody: Custody | null): void {
    const alert = element("custody-halt");
    const halted = custody?.mode === "vault" && custody.crediting === "halted";
    alert.hidden = !halted;
    alert.textContent = halted
      ? `Deposits are not being credited on this chain: the venue stopped crediting (${custody.haltReason ?? "no reason given"}). ` +
        "Funds already credited trade and withdraw as usual; deposits are credited once an operator resolves this."
      : "";
  }

  /** Subscribes to the account's orders and balances and reads its histories. */
  private async follow(): Promise<void> {
    for (const id of this.subscriptions) this.stream.unsubscribe(id);
    this.subscriptions = [];
    this.openOrders.clear();
    this.balances.clear();
    const venue = this.venue;
    const signer = this.signer;
    if (!venue || !signer) return this.renderAll();
    const name = { chainId: venue.chainId, account: subaccountAddress(signer.address, this.subaccount) };
    this.subscriptions.push(
      this.stream.subscribe("orders", name, (message) => this.onOrders(message)),
      this.stream.subscribe("balances", name, (message) => this.onBalances(message)),
    );
    await this.refresh();
  }

  /** After a reconnect the stream sends new snapshots; the histories are read again. */
  async resynchronise(): Promise<void> {
    await this.refresh();
  }

  private onOrders(message: OrdersMessage | SubscriptionEvent): void {
    if (message.event !== "snapshot" && message.event !== "update") return;
    const orders = message.orders;
    if (message.event === "snapshot") this.openOrders.clear();
    for (const order of orders) {
      if (order.status === "open" || order.status === "untriggered") this.openOrders.set(order.orderId, order);
      else this.openOrders.delete(order.orderId);
    }
    this.renderOpenOrders();
    if (message.event === "update") this.scheduleRefresh();
  }

  private onBalances(message: BalancesMessage | SubscriptionEvent): void {
    if (message.event !== "snapshot" && message.event !== "update") return;
    if (message.event === "snapshot") this.balances.clear();
    for (const balance of message.balances) this.balances.set(balance.symbol, balance);
    this.renderBalances();
    if (message.event === "update") this.scheduleRefresh();
  }

  private scheduleRefresh(): void {
    window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.refresh(), REFRESH_DELAY_MS);
  }

  /** Reads everything the stream does not carry whole: histories, fills, position, reserves. */
  private async refresh(): Promise<void> {
    const venue = this.venue;
    const signer = this.signer;
    if (!venue) return;
    const client = reader(venue.chainId);
    const reserves = venue.custody.mode === "vault"
      ? client.reserves().then((answer) => {
        this.renderReserves(answer.assets);
        this.renderCustodyHalt(answer.custody);
      })
      : Promise.resolve(this.renderReserves(null));
    if (!signer) {
      await reserves;
      await showLiabilities(venue, null, null);
      return;
    }
    const owner = signer.address;
    const account = subaccountAddress(owner, this.subaccount);
    // Read through the browser's wallet, if there is one, whoever signs: the check only reads.
    // The liability tree counts the subaccounts in the owner's leaf.
    void showLiabilities(venue, owner, injectedWallet());
    const list = { limit: HISTORY_ROWS };
    const pair = venue.pair.symbol;
    try {
      const [filled, cancelled, fills, position, tradable, deposits, withdrawals, subaccounts] = await Promise.all([
        client.filledOrders(undefined, account, list),
        client.cancelledOrders(undefined, account, list),
        client.accountTrades(pair, account, list),
        client.position(pair, account),
        client.tradable(account),
        client.deposits(owner, list),
        client.withdrawals(owner, list),
        ownerReader(venue.chainId, owner).subaccounts(),
        reserves,
      ]);
      await renderAgents(venue, owner, (agent, button) => void this.revoke(agent.agent, button));
      element("known-subaccounts").replaceChildren(
        ...subaccounts.map((item) => new Option(`${item.subaccount}`, `${item.subaccount}`)),
      );
      if (signer !== this.signer || venue !== this.venue) return;
      this.renderHistory([...filled, ...cancelled].sort((a, b) => b.updatedAt - a.updatedAt).slice(0, HISTORY_ROWS));
      this.renderFills(fills);
      this.renderPosition(position.position);
      this.tradable = tradable;
      this.renderTransfers(deposits, withdrawals);
      await this.twaps.refresh();
      this.preview();
    } catch (error) {
      this.callbacks.fail(`Account: ${describe(error)}`);
    }
  }

  private renderAll(): void {
    this.renderOpenOrders();
    this.renderBalances();
    if (!this.signer) {
      this.renderHistory([]);
      this.renderFills([]);
      this.renderPosition(null);
      this.renderTransfers([], []);
    }
    this.preview();
  }

  private renderOpenOrders(): void {
    const orders = [...this.openOrders.values()].sort((a, b) => b.timestamp - a.timestamp);
    fill(
      "open-orders",
      orders.map((order) => {
        const described = `${order.direction} ${order.amount} ${order.symbol} at ${order.price ?? "market"}`;
        const cancel = button("Cancel", `Cancel ${described}`, (pressed) => void this.cancel(order, pressed));
        const edit = button("Edit", `Edit ${described}`, () =>
          openAmendDialog(order, (price, amount) => this.amend(order, price, amount)),
        );
        const actions = document.createElement("span");
        actions.className = "row-actions";
        actions.append(edit, cancel);
        const price = order.price ?? "market";
        const waiting = order.status === "untriggered" ? ` when a trade is ${order.triggerCondition} ${order.triggerPrice}` : "";
        const expiry = order.expiresAt ? `, expires ${new Date(order.expiresAt).toLocaleTimeString()}` : "";
        const shown = `${price}${waiting}${expiry}`;
        return row([`${order.direction} ${order.symbol}`, shown, order.amount, order.filled, order.clientOrderId ?? "", actions], {
          "data-order-id": order.orderId,
        });
      }),
      this.signer ? "No open orders." : "Connect to see your orders.",
    );
  }

  private renderHistory(orders: Order[]): void {
    fill(
      "order-history",
      orders.map((order) =>
        row([`${order.direction} ${order.symbol}`, order.type, order.price ?? "market", order.amount, order.filled, order.status, dateTime(order.updatedAt)], {
          "data-order-id": order.orderId,
        }),
      ),
      "No closed orders.",
    );
  }

  private renderFills(trades: AccountTrade[]): void {
    fill(
      "fills",
      trades.map((trade) => {
        const side = trade.role === "taker" ? trade.takerDirection : trade.takerDirection === "buy" ? "sell" : "buy";
        return row([side, trade.role, trade.price, trade.amount, `${trade.fee} ${trade.feeAsset}`, dateTime(trade.timestamp)], {
          "data-trade-id": trade.tradeId,
        });
      }),
      "No fills.",
    );
  }

  private renderBalances(): void {
    fill(
      "balances",
      [...this.balances.values()].map((balance) =>
        row([balance.symbol, balance.total, balance.available, balance.locked], { "data-symbol": balance.symbol }),
      ),
      this.signer ? "Loading balances…" : "Connect to see your balances.",
    );
  }

  private renderReserves(reserves: Reserve[] | null): void {
    element("reserves").hidden = reserves === null;
    if (reserves) {
      fill("reserves-table", reserves.map((item) => row([item.symbol, item.onChain ?? "–", item.liabilities, item.surplus ?? "–"])), "No assets.");
    }
  }

  private renderPosition(position: Position | null): void {
    const list = element("position");
    list.replaceChildren();
    if (!position) {
      list.textContent = this.signer ? "No position." : "Connect to see your position.";
      return;
    }
    const entries: [string, string][] = [
      ["Net amount", position.netAmount],
      ["Average entry price", position.averageEntryPrice],
      ["Mark price", position.markPrice ?? "–"],
      ["Realized PnL", position.realizedPnl],
      ["Unrealized PnL", position.unrealizedPnl],
    ];
    for (const [term, value] of entries) {
      const wrapper = document.createElement("div");
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = value;
      wrapper.append(dt, dd);
      list.append(wrapper);
    }
  }

  private renderTransfers(deposits: Transfer[], withdrawals: Transfer[]): void {
    const all = [
      ...deposits.map((transfer) => ({ kind: "Deposit", transfer })),
      ...withdrawals.map((transfer) => ({ kind: "Withdrawal", transfer })),
    ].sort((a, b) => b.transfer.timestamp - a.transfer.timestamp);
    fill(
      "transfers",
      all.map(({ kind, transfer }) =>
        row([kind, transfer.symbol, transfer.quantity, transfer.status, transfer.txHash ?? "–", dateTime(transfer.timestamp)], {
          "data-transfer-id": transfer.id,
        }),
      ),
      "No deposits or withdrawals.",
    );
  }

  /** The order form's preview: cost, the most fee, and the most the account can trade. */
  preview(): void {
    const venue = this.venue;
    const form = this.readForm();
    const pair = venue?.pair;
    let cost = "–";
    let fee = "–";
    let most = "–";
    if (pair) {
      const best = this.callbacks.bestPrices();
      const price = form.type === "limit" ? form.price : form.direction === "buy" ? best.ask : best.bid;
      const amount = form.amount;
      const feeRate = pair.takerFee;
      if (price && amount) {
        const notional = multiply(price, amount);
        if (notional) {
          cost = `${notional} ${pair.quote}${form.type === "market" ? " (at the best price now)" : ""}`;
          fee = form.direction === "buy"
            ? `${multiply(amount, feeRate) ?? "–"} ${pair.base}`
            : `${multiply(notional, feeRate) ?? "–"} ${pair.quote}`;
        }
      }
      const tradable = this.tradable.find((item) => item.symbol === pair.symbol);
      if (tradable) {
        most = form.direction === "buy"
          ? `${tradable.buy.maxAmount} ${pair.base} (${tradable.buy.maxCost} ${pair.quote} available)`
          : `${tradable.sell.maxAmount} ${pair.base}`;
      } else if (!this.signer) {
        most = "connect to see";
      }
    }
    element("preview-cost").textContent = cost;
    element("preview-fee").textContent = fee;
    element("preview-max").textContent = most;
    element<HTMLInputElement>("order-price").disabled = form.type === "market";
  }

  private readForm() {
    const form = element<HTMLFormElement>("order-form");
    const value = (name: string) => (form.querySelector<HTMLInputElement>(`input[name="${name}"]:checked`)?.value ?? "");
    return {
      direction: value("direction") === "sell" ? "sell" : "buy",
      type: value("type") === "market" ? "market" : "limit",
      price: canonical(element<HTMLInputElement>("order-price").value),
      amount: canonical(element<HTMLInputElement>("order-amount").value),
      rawPrice: element<HTMLInputElement>("order-price").value.trim(),
      rawAmount: element<HTMLInputElement>("order-amount").value.trim(),
      timeInForce: element<HTMLSelectElement>("order-tif").value,
      postOnly: element<HTMLInputElement>("order-post-only").checked,
      clientOrderId: element<HTMLInputElement>("order-client-id").value.trim(),
      triggerPrice: canonical(element<HTMLInputElement>("order-trigger-price").value),
      rawTriggerPrice: element<HTMLInputElement>("order-trigger-price").value.trim(),
      triggerCondition: element<HTMLSelectElement>("order-trigger-condition").value,
      expiresInMs: Number(element<HTMLSelectElement>("order-expiry").value || 0),
    } as const;
  }

  private async placeOrder(): Promise<void> {
    const venue = this.venue;
    const signer = this.trader();
    if (!venue || !signer) return this.callbacks.fail("Connect a wallet or paste a key to place orders.");
    const form = this.readForm();
    if (!form.amount) return this.callbacks.fail(`The amount "${form.rawAmount}" is not a positive decimal number.`);
    if (form.type === "limit" && !form.price) return this.callbacks.fail(`The price "${form.rawPrice}" is not a positive decimal number.`);
    if (form.rawTriggerPrice && !form.triggerPrice) return this.callbacks.fail(`The trigger price "${form.rawTriggerPrice}" is not a positive decimal number.`);
    const timeInForce = form.type === "market" && form.timeInForce === "GTC" ? "IOC" : form.timeInForce;
    const symbol = venue.pair.symbol;
    const button = element<HTMLButtonElement>("place-order");
    button.disabled = true;
    try {
      const answer = await writer(venue.chainId, signer).addOrder({
        symbol, type: form.type, direction: form.direction, amount: form.amount,
        price: form.type === "limit" ? form.price ?? undefined : undefined,
        timeInForce: timeInForce as "GTC" | "IOC" | "FOK", postOnly: form.postOnly,
        clientOrderId: form.clientOrderId || undefined,
        triggerPrice: form.triggerPrice ?? undefined,
        triggerCondition: form.triggerPrice ? (form.triggerCondition as "above" | "below") : undefined,
        expiresAt: form.expiresInMs ? Date.now() + form.expiresInMs : undefined,
      });
      const order = answer.order;
      this.callbacks.announce(
        `Order ${order.status}: ${order.direction} ${order.amount} ${symbol}` +
          `${order.price ? ` at ${order.price}` : ""}, filled ${order.filled} in ${answer.trades.length} trade(s).`,
      );
    } catch (error) {
      this.callbacks.fail(`Order refused: ${describe(error)}`);
    } finally {
      button.disabled = this.signer === null;
    }
  }

  private async cancel(order: Order, button: HTMLButtonElement): Promise<void> {
    const venue = this.venue;
    const signer = this.trader();
    if (!venue || !signer) return;
    button.disabled = true;
    try {
      await writer(venue.chainId, signer).cancelOrder(order.symbol, order.orderId);
      this.callbacks.announce(`Cancelled the ${order.direction} order of ${order.amount} ${order.symbol}.`);
    } catch (error) {
      button.disabled = false;
      this.callbacks.fail(`Cancel refused: ${describe(error)}`);
    }
  }

  private async cancelAll(): Promise<void> {
    const venue = this.venue;
    const signer = this.trader();
    if (!venue || !signer) return;
    try {
      const orders = await cancelAll(venue, signer);
      this.callbacks.announce(`Cancelled all open orders: ${orders.length} order(s).`);
    } catch (error) {
      this.callbacks.fail(`Cancel all refused: ${describe(error)}`);
    }
  }

  /** Amends `order`; whether the dialog may close (false keeps it open to correct the input). */
  private async amend(order: Order, price: string, amount: string): Promise<boolean> {
    const venue = this.venue;
    const signer = this.trader();
    if (!venue || !signer) return true;
    try {
      const amended = await amendOrder(venue, signer, order, price, amount);
      this.callbacks.announce(`Order edited: now ${amended.direction} ${amended.amount} ${amended.symbol} at ${amended.price ?? "market"}.`);
      return true;
    } catch (error) {
      this.callbacks.fail(`Edit refused: ${describe(error)}`);
      return false;
    }
  }

  private async startSession(): Promise<void> {
    const venue = this.venue;
    const owner = this.signer;
    if (!venue || !owner) return;
    try {
      this.session = await startSession(venue, owner);
    } catch (error) {
      return this.callbacks.fail(`The session key was not approved: ${describe(error)}`);
    }
    this.renderSigner();
    this.callbacks.announce(`Orders are now signed with the session key ${this.session.agent}.`);
    void this.refresh();
  }

  private async setSwitch(): Promise<void> {
    const venue = this.venue;
    const signer = this.trader();
    if (!venue || !signer) return;
    try {
      const triggerAt = await setSwitch(venue, signer, element<HTMLInputElement>("switch-seconds").value);
      const state = triggerAt === null
        ? "The switch is off."
        : `Every open order is cancelled at ${new Date(triggerAt).toLocaleTimeString([], { hour12: false })} unless the switch is set again.`;
      element("switch-state").textContent = state;
      this.callbacks.announce(state);
    } catch (error) {
      this.callbacks.fail(`Switch refused: ${describe(error)}`);
    }
  }

  /** Stops signing with the session key (it stays approved until revoked or its end). */
  private endSession(): void {
    this.session = null;
    this.renderSigner();
    this.callbacks.announce("Orders are signed by the account's own signer again.");
  }

  private async revoke(agent: string, button: HTMLButtonElement): Promise<void> {
    const venue = this.venue;
    const owner = this.signer;
    if (!venue || !owner) return;
    button.disabled = true;
    try {
      await revokeAgent(venue, owner, agent);
      if (this.session?.agent === agent) this.session = null;
      this.renderSigner();
      this.callbacks.announce(`Revoked the agent ${agent}.`);
      await this.refresh();
    } catch (error) {
      button.disabled = false;
      this.callbacks.fail(`Revoke refused: ${describe(error)}`);
    }
  }

  private async transfer(kind: "deposit" | "withdraw" | "request"): Promise<void> {
    const venue = this.venue;
    const signer = this.signer;
    if (!venue || !signer) return;
    const symbol = element<HTMLSelectElement>("transfer-asset").value;
    const raw = element<HTMLInputElement>("transfer-quantity").value.trim();
    const quantity = canonical(raw);
    if (!quantity) return this.callbacks.fail(`The quantity "${raw}" is not a positive decimal number.`);
    const asset = venue.assets.find((item) => item.symbol === symbol);
    if (!asset) return this.callbacks.fail(`No asset ${symbol} on this chain.`);
    try {
      if (kind === "deposit" && venue.custody.mode === "vault") {
        const provider = signer.kind === "wallet" ? injectedWallet() : null;
        if (!provider) {
          return this.callbacks.fail(
            "On a vault chain a deposit is a transaction from your own wallet: connect a browser wallet, or send it " +
              "yourself as the help below the form says.",
          );
        }
        const units = toUnits(quantity, asset.decimals);
        if (units === null) return this.callbacks.fail(`${symbol} has ${asset.decimals} decimals; ${quantity} has more.`);
        const hash = await depositFromWallet(provider, venue.chainId, signer.address, venue.custody.vault, asset.native ? null : asset.address, units);
        this.callbacks.announce(`Deposit sent (${hash}); it is credited ${creditedWhen(venue.custody)}.`);
        return;
      }
      if (kind === "request") {
        const provider = signer.kind === "wallet" && venue.custody.mode === "vault" ? injectedWallet() : null;
        if (!provider || venue.custody.mode !== "vault") {
          return this.callbacks.fail("A withdrawal asked of the vault is a transaction from your own wallet: connect a browser wallet.");
        }
        const units = toUnits(quantity, asset.decimals);
        if (units === null) return this.callbacks.fail(`${symbol} has ${asset.decimals} decimals; ${quantity} has more.`);
        const hash = await requestFromWallet(provider, venue.chainId, signer.address, venue.custody.vault, asset.native ? null : asset.address, units);
        this.callbacks.announce(
          `Withdrawal of ${quantity} ${asset.symbol} asked of the vault (${hash}); the venue must pay it within the vault's request period.`,
        );
        element<HTMLInputElement>("transfer-quantity").value = "";
        return;
      }
      // A quantity finer than the asset's decimals the client refuses before it signs anything.
      const client = writer(venue.chainId, signer);
      const answer: { deposit?: Transfer; withdrawal?: Transfer } = kind === "deposit"
        ? await client.deposit(asset.symbol, quantity)
        : await client.withdraw(asset.symbol, quantity);
      const transfer = answer.deposit ?? answer.withdrawal;
      this.callbacks.announce(`${kind === "deposit" ? "Deposit" : "Withdrawal"} of ${quantity} ${asset.symbol}: ${transfer?.status ?? "sent"}.`);
      element<HTMLInputElement>("transfer-quantity").value = "";
    } catch (error) {
      // A venue that does not answer (or refuses for its own sake) cannot keep funds in: say how
      // to ask the vault itself.
      const unanswered = error instanceof ApiError && (error.status === 0 || error.status >= 500);
      const hint = kind === "withdraw" && unanswered && venue.custody.mode === "vault"
        ? ' The venue did not answer: "Ask the vault" sends the withdrawal from your wallet to the vault itself.'
        : "";
      const what = kind === "deposit" ? "Deposit" : "Withdrawal";
      this.callbacks.fail(`${what} refused: ${describe(error)}${hint}`);
    }
  }
}

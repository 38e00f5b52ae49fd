//! What a market maker uses on the page: cancel all, amend (a new price or amount for an open
//! order, in one step), and a session key: a key the page makes, approves as the account's
//! agent for a day with the account's own signer, and then signs orders with, so that a browser
//! wallet is not asked for every order. The session key never leaves this page's memory and can
//! never move funds; the Agents tab lists the account's agents and revokes them.

import { generatePrivateKey } from "viem/accounts";
import { reader, writer, type Agent, type Order, type Signer, type Venue } from "./api";
import { canonical } from "./decimal";
import { button, dateTime, element, fill, row } from "./dom";
import { agentSigner } from "./signing";

/** How long a session key is approved for. */
export const SESSION_LIFETIME_MS = 24 * 3_600_000;
/** The name a session key is approved under. */
export const SESSION_AGENT_NAME = "page-session";

/** A session key in use: its signer (for the account) and its address. */
export interface Session { signer: Signer; agent: string; validUntil: number }

/** Cancels every open order of the signer's account on the chain; the orders cancelled. */
export function cancelAll(venue: Venue, signer: Signer): Promise<Order[]> {
  return writer(venue.chainId, signer).cancelAll();
}

/**
 * Replaces `order` by one with `rawPrice` and/or `rawAmount` (left empty: unchanged); the new
 * order. Throws with the reason in words when an input is not a decimal or nothing changes.
 */
export async function amendOrder(venue: Venue, signer: Signer, order: Order, rawPrice: string, rawAmount: string): Promise<Order> {
  const price = rawPrice.trim() === "" || rawPrice.trim() === order.price ? "" : canonical(rawPrice);
  const amount = rawAmount.trim() === "" || rawAmount.trim() === order.remaining ? "" : canonical(rawAmount);
  if (price === null) throw new Error(`The price "${rawPrice}" is not a positive decimal number.`);
  if (amount === null) throw new Error(`The amount "${rawAmount}" is not a positive decimal number.`);
  if (price === "" && amount === "") throw new Error("Nothing to change: give a new price or a new amount.");
  return writer(venue.chainId, signer).amendOrder(order.symbol, order.orderId, {
    price: price || undefined,
    amount: amount || undefined,
  });
}

/**
 * Sets the dead man's switch to `seconds` from now (0 turns it off); when it fires, or null.
 * Throws with the reason in words for an input outside 0 or 5 to 86,400.
 */
export async function setSwitch(venue: Venue, signer: Signer, rawSeconds: string): Promise<number | null> {
  const seconds = Number(rawSeconds.trim());
  if (!/^[0-9]+$/.test(rawSeconds.trim()) || (seconds !== 0 && (seconds < 5 || seconds > 86_400))) {
    throw new Error(`The switch takes 0 (off) or 5 to 86400 seconds, not "${rawSeconds}".`);
  }
  return writer(venue.chainId, signer).cancelAllAfter(seconds * 1000);
}

/** Makes a session key and approves it as the owner's agent; the session to sign orders with. */
export async function startSession(venue: Venue, owner: Signer): Promise<Session> {
  const signer = agentSigner(generatePrivateKey(), owner.address);
  const validUntil = Date.now() + SESSION_LIFETIME_MS;
  await writer(venue.chainId, owner).approveAgent(signer.agent, SESSION_AGENT_NAME, validUntil);
  return { signer, agent: signer.agent, validUntil };
}

/** Ends an agent's approval, signed by the owner. */
export function revokeAgent(venue: Venue, owner: Signer, agent: string): Promise<void> {
  return writer(venue.chainId, owner).revokeAgent(agent);
}

/** The account's agents, with a Revoke button each. */
export async function renderAgents(venue: Venue, account: string, revoke: (agent: Agent, button: HTMLButtonElement) => void): Promise<void> {
  const agents = await reader(venue.chainId).agents(account);
  fill(
    "agents",
    agents.map((agent) => {
      const revokeButton = button("Revoke", `Revoke the agent ${agent.name} (${agent.agent})`, (pressed) => revoke(agent, pressed));
      return row([agent.name, agent.agent, agent.validUntil === null ? "until revoked" : dateTime(agent.validUntil), revokeButton], {
        "data-agent": agent.agent,
      });
    }),
    "No agents.",
  );
}

/** Opens the edit dialog for `order`; `save` gets the new price and amount as typed. */
export function openAmendDialog(order: Order, save: (price: string, amount: string) => Promise<boolean>): void {
  const dialog = element<HTMLDialogElement>("amend-dialog");
  element("amend-order").textContent =
    `${order.direction} ${order.remaining} ${order.symbol} at ${order.price ?? "market"} (the new order replaces it)`;
  element<HTMLInputElement>("amend-price").value = order.price ?? "";
  element<HTMLInputElement>("amend-amount").value = order.remaining;
  const form = element<HTMLFormElement>("amend-form");
  form.onsubmit = async (event) => {
    event.preventDefault();
    const action = ((event as SubmitEvent).submitter as HTMLButtonElement | null)?.value;
    if (action !== "save") return dialog.close();
    const saved = await save(element<HTMLInputElement>("amend-price").value, element<HTMLInputElement>("amend-amount").value);
    if (saved) dialog.close();
  };
  dialog.showModal();
  element<HTMLInputElement>("amend-price").focus();
}

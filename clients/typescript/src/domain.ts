/**
 * What this client signs under, compiled in: the EIP-712 domain's name and version, and every
 * request type dexd defines. The venue's `GET /account/eip712` is checked against them before
 * anything is signed, and its domain pinned to the chain the client was made for and to the venue
 * contract given (or learned from the first answer and then held): a phishing or intercepted
 * server that publishes another chain's or another venue's domain, or other types, gets no
 * signature it could use elsewhere (`pinnedEip712`). It sends nothing and holds no key.
 */

import { getAddress } from "viem";
import type { Eip712 } from "./types.js";

/** The domain's name and version every dexd request is signed under. */
export const DOMAIN_NAME = "dexd";
export const DOMAIN_VERSION = "1";

/** Every request type's members, as dexd defines them (contract versions 1 to 5). */
const MEMBERS: Record<string, [string, string][]> = {
  Order: [["account", "address"], ["symbol", "string"], ["orderType", "string"], ["direction", "string"], ["timeInForce", "string"], ["postOnly", "bool"], ["price", "string"], ["amount", "string"], ["clientOrderId", "string"], ["nonce", "uint256"], ["expiry", "uint256"], ["triggerPrice", "string"], ["triggerCondition", "string"], ["ocoGroup", "string"], ["expiresAt", "uint256"]],
  OrderBatch: [["account", "address"], ["orders", "Order[]"], ["nonce", "uint256"], ["expiry", "uint256"]],
  CancelOrder: [["account", "address"], ["symbol", "string"], ["orderId", "bytes32"], ["nonce", "uint256"], ["expiry", "uint256"]],
  Deposit: [["account", "address"], ["symbol", "string"], ["quantity", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  Withdraw: [["account", "address"], ["symbol", "string"], ["quantity", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  CancelAll: [["account", "address"], ["symbol", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  AmendOrder: [["account", "address"], ["symbol", "string"], ["orderId", "bytes32"], ["price", "string"], ["amount", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  CancelAllAfter: [["account", "address"], ["timeoutMs", "uint256"], ["nonce", "uint256"], ["expiry", "uint256"]],
  ApproveAgent: [["account", "address"], ["agent", "address"], ["name", "string"], ["validUntil", "uint256"], ["nonce", "uint256"], ["expiry", "uint256"]],
  RevokeAgent: [["account", "address"], ["agent", "address"], ["nonce", "uint256"], ["expiry", "uint256"]],
  Transfer: [["account", "address"], ["fromSubaccount", "uint32"], ["toSubaccount", "uint32"], ["symbol", "string"], ["quantity", "string"], ["clientTransferId", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  Twap: [["account", "address"], ["symbol", "string"], ["direction", "string"], ["amount", "string"], ["durationMs", "uint256"], ["intervalMs", "uint256"], ["limitPrice", "string"], ["clientTwapId", "string"], ["nonce", "uint256"], ["expiry", "uint256"]],
  CancelTwap: [["account", "address"], ["twapId", "uint256"], ["nonce", "uint256"], ["expiry", "uint256"]],
  // The vault's own withdrawal type (vault chains), signed under the same domain.
  Withdrawal: [["account", "address"], ["token", "address"], ["amount", "uint256"], ["withdrawalId", "uint256"], ["expiry", "uint256"]],
};

/** Every request type, as viem takes them. */
export const REQUEST_TYPES: Record<string, { name: string; type: string }[]> = Object.fromEntries(
  Object.entries(MEMBERS).map(([name, members]) => [name, members.map(([member, type]) => ({ name: member, type }))]),
);

/** A venue's signing description this client will not sign under: another chain's, venue's or types. */
export class SigningRefused extends Error {
  readonly code = "DOMAIN_MISMATCH";
  constructor(message: string) {
    super(`refusing to sign: ${message}`);
    this.name = "SigningRefused";
  }
}

/**
 * The venue's `published` description with the compiled-in types, once its domain is dexd's, of
 * `chainId`, and of `verifyingContract` when one is given; throws `SigningRefused` otherwise, or
 * when it publishes a type this client signs with other members.
 */
export function pinnedEip712(published: Eip712, chainId: string, verifyingContract?: string): Eip712 {
  const domain = published.domain;
  if (domain.name !== DOMAIN_NAME || domain.version !== DOMAIN_VERSION) {
    throw new SigningRefused(`the venue signs as ${JSON.stringify(domain.name)} version ${JSON.stringify(domain.version)}, not dexd version 1`);
  }
  if (String(domain.chainId) !== String(chainId)) {
    throw new SigningRefused(`the venue publishes the domain of chain ${domain.chainId}; this client signs for chain ${chainId}`);
  }
  if (verifyingContract !== undefined && getAddress(domain.verifyingContract) !== getAddress(verifyingContract)) {
    throw new SigningRefused(`the venue publishes the contract ${domain.verifyingContract}; this client signs for ${verifyingContract}`);
  }
  for (const [name, members] of Object.entries(REQUEST_TYPES)) {
    const theirs = published.types[name];
    if (theirs !== undefined && JSON.stringify(theirs.map(({ name: member, type }) => [member, type])) !== JSON.stringify(members.map(({ name: member, type }) => [member, type]))) {
      throw new SigningRefused(`the venue publishes the type ${name} with other members than dexd's`);
    }
  }
  return { ...published, types: { ...REQUEST_TYPES } };
}

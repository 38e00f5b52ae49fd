/**
 * Signing a request locally: the EIP-712 types and domain `GET /account/eip712` publishes, any
 * viem account (a local key, a hardware or smart account that signs typed data) as the signer,
 * and the fields a signed request carries instead of a key (`account`, `nonce`, `expiry`,
 * `signature`). A key handed to `keySigner` stays in viem's account object: nothing here sends,
 * stores or prints it.
 */

import { privateKeyToAccount } from "viem/accounts";
import { getAddress, type Client, type Hex } from "viem";
import { signTypedData } from "viem/actions";
import type { Eip712 } from "./types.js";

/** What signs: an address and a way to sign typed data (a viem `LocalAccount` is one). */
export interface Signer {
  readonly address: string;
  signTypedData(parameters: {
    domain: { name: string; version: string; chainId: number; verifyingContract: Hex };
    types: Record<string, readonly { name: string; type: string }[]>;
    primaryType: string;
    message: Record<string, unknown>;
  }): Promise<Hex>;
}

/** The fields a client-signed request carries instead of a key. */
export interface SignedFields { account: string; nonce: string; expiry: number; signature: string }

/** How long a signature stays good: a minute, well inside the venue's hour. */
export const SIGNATURE_LIFETIME_MS = 60_000;
/**
 * How long a withdrawal's signature stays good beyond the chain's withdrawal wait: a vault chain
 * refuses an expiry less than `minWithdrawalLifetimeMs` ahead.
 */
export const WITHDRAWAL_SIGNATURE_LIFETIME_MS = 15 * 60_000;

/** A signer over a private key (`0x` + 64 hex digits). */
export function keySigner(privateKey: string): Signer {
  if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) throw new Error("a private key is 0x followed by 64 hex digits");
  return privateKeyToAccount(privateKey as Hex);
}

/**
 * A signer through a viem wallet client (a browser wallet over EIP-1193 with
 * `createWalletClient({ transport: custom(window.ethereum) })`, or the lighter `createClient`
 * with the same transport): the wallet shows and signs each request as `address`
 * (`eth_signTypedData_v4`); no key reaches this process.
 */
export function walletSigner(wallet: Client, address: string): Signer {
  const account = getAddress(address);
  return {
    address: account,
    signTypedData: (parameters) =>
      signTypedData(wallet, { account, ...parameters } as Parameters<typeof signTypedData>[1]),
  };
}

function randomNonce(): bigint {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return BigInt(`0x${[...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`);
}

function withdrawalLifetimeMs(eip712: Eip712): number {
  const lifetime = (eip712.minWithdrawalLifetimeMs ?? 0) + WITHDRAWAL_SIGNATURE_LIFETIME_MS;
  return Math.min(lifetime, eip712.maxWithdrawalLifetimeMs ?? lifetime);
}

/**
 * Signs `message` (without `account`, `nonce` and `expiry`) as `primaryType` for `account`
 * (the signer's own, or the account an agent acts for) and returns the request's fields.
 */
export async function signRequest(
  signer: Signer,
  account: string,
  eip712: Eip712,
  primaryType: string,
  message: Record<string, unknown>,
): Promise<SignedFields> {
  const fields = eip712.types[primaryType];
  if (!fields) throw new Error(`the venue publishes no type ${primaryType}`);
  const nonce = randomNonce();
  const expiry = Date.now() + (primaryType === "Withdrawal" ? withdrawalLifetimeMs(eip712) : SIGNATURE_LIFETIME_MS);
  const full: Record<string, unknown> =
    primaryType === "Withdrawal"
      ? { account, ...message, withdrawalId: nonce, expiry: BigInt(expiry) }
      : { account, ...message, nonce, expiry: BigInt(expiry) };
  const signature = await signer.signTypedData({
    domain: { ...eip712.domain, verifyingContract: eip712.domain.verifyingContract as Hex },
    types: { [primaryType]: fields },
    primaryType,
    message: full,
  });
  return { account, nonce: nonce.toString(), expiry, signature };
}

/**
 * Signs 1 to 50 orders (each an `Order` message without `account`, `nonce` and `expiry`) once,
 * as an `OrderBatch` (contract version 4): every order carries the batch's account, nonce and
 * expiry. Returns the request's top-level fields; the items then carry no credential.
 */
export async function signBatch(
  signer: Signer,
  account: string,
  eip712: Eip712,
  orders: Record<string, unknown>[],
): Promise<SignedFields> {
  const batchFields = eip712.types.OrderBatch;
  const orderFields = eip712.types.Order;
  if (!batchFields || !orderFields) throw new Error("the venue publishes no OrderBatch type (contract version 4)");
  const nonce = randomNonce();
  const expiry = Date.now() + SIGNATURE_LIFETIME_MS;
  const full = orders.map((order) => ({ account, ...order, nonce, expiry: BigInt(expiry) }));
  const signature = await signer.signTypedData({
    domain: { ...eip712.domain, verifyingContract: eip712.domain.verifyingContract as Hex },
    types: { OrderBatch: batchFields, Order: orderFields },
    primaryType: "OrderBatch",
    message: { account, orders: full, nonce, expiry: BigInt(expiry) },
  });
  return { account, nonce: nonce.toString(), expiry, signature };
}

/** A decimal in the venue's canonical form: no exponent, no trailing zeros, no sign. */
export function canonicalDecimal(value: string | number): string {
  const text = String(value).trim();
  if (!/^\d+(\.\d+)?$/.test(text)) throw new Error(`not a non-negative decimal: ${text}`);
  const [whole, fraction = ""] = text.split(".");
  const wholePart = whole.replace(/^0+(?=\d)/, "");
  const fractionPart = fraction.replace(/0+$/, "");
  return fractionPart ? `${wholePart}.${fractionPart}` : wholePart;
}

//! Who signs: an injected browser wallet (EIP-1193, `eth_signTypedData_v4`) or a private key the
//! user pasted, held in this module's closure only (never stored, never sent, never logged).
//! Both sign the EIP-712 typed data that `GET /account/eip712` publishes; the request then
//! carries `account`, `nonce`, `expiry` and `signature`, never a key.

import { privateKeyToAccount } from "viem/accounts";
import { encodeFunctionData, getAddress, type Hex } from "viem";
import type { Eip712 } from "./api";

export interface Signer {
  /** The account's EIP-55 address. */
  readonly address: string;
  /** How it signs, in words the page shows. */
  readonly description: string;
  readonly kind: "wallet" | "key";
  signTypedData(eip712: Eip712, primaryType: string, message: Record<string, unknown>): Promise<string>;
}

/** The fields a client-signed request carries instead of a key. */
export interface SignedFields { account: string; nonce: string; expiry: number; signature: string }

/** How long a signature stays good: a minute, well inside the venue's hour. */
const SIGNATURE_LIFETIME_MS = 60_000;
/**
 * How long a withdrawal's signature stays good beyond the chain's withdrawal wait: it is paid
 * once a liability root covering it is past the vault's challenge period, and a vault chain
 * refuses an expiry less than that wait (`minWithdrawalLifetimeMs`) ahead.
 */
const WITHDRAWAL_SIGNATURE_LIFETIME_MS = 15 * 60_000;

/** A withdrawal's lifetime on the chain `eip712` describes, within the venue's longest. */
function withdrawalLifetimeMs(eip712: Eip712): number {
  const lifetime = (eip712.minWithdrawalLifetimeMs ?? 0) + WITHDRAWAL_SIGNATURE_LIFETIME_MS;
  return Math.min(lifetime, eip712.maxWithdrawalLifetimeMs ?? lifetime);
}

function randomNonce(): bigint {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return BigInt(`0x${[...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`);
}

/** Signs `message` (without account, nonce and expiry) as `primaryType`. */
export async function signRequest(
  signer: Signer,
  eip712: Eip712,
  primaryType: string,
  message: Record<string, unknown>,
): Promise<SignedFields> {
  const nonce = randomNonce();
  const expiry =
    Date.now() + (primaryType === "Withdrawal" ? withdrawalLifetimeMs(eip712) : SIGNATURE_LIFETIME_MS);
  const full: Record<string, unknown> =
    primaryType === "Withdrawal"
      ? { account: signer.address, ...message, withdrawalId: nonce, expiry: BigInt(expiry) }
      : { account: signer.address, ...message, nonce, expiry: BigInt(expiry) };
  const signature = await signer.signTypedData(eip712, primaryType, full);
  return { account: signer.address, nonce: nonce.toString(), expiry, signature };
}

function typesFor(eip712: Eip712, primaryType: string) {
  const fields = eip712.types[primaryType];
  if (!fields) throw new Error(`The venue publishes no type ${primaryType}.`);
  return { [primaryType]: fields };
}

function domainOf(eip712: Eip712) {
  return { ...eip712.domain, verifyingContract: eip712.domain.verifyingContract as Hex };
}

/** A signer over a pasted key. The key lives only in this closure. */
export function keySigner(privateKey: string): Signer {
  const text = privateKey.trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) throw new Error("A private key is 0x followed by 64 hex digits.");
  const account = privateKeyToAccount(text as Hex);
  return {
    address: account.address,
    kind: "key",
    description: "a key held in this page's memory only: it is never stored and never sent; reload the page to forget it",
    signTypedData: (eip712, primaryType, message) =>
      account.signTypedData({
        domain: domainOf(eip712),
        types: typesFor(eip712, primaryType),
        primaryType,
        message,
      }),
  };
}

/**
 * A signer for `account` over a key the account approved as its agent (a session key the page
 * made): it signs the account's orders with its own key, and the venue lets it trade, never move
 * funds. The key lives only in this closure.
 */
export function agentSigner(privateKey: Hex, account: string): Signer & { readonly agent: string } {
  const key = privateKeyToAccount(privateKey);
  return {
    address: account,
    agent: key.address,
    kind: "key",
    description: `a session key (agent ${key.address}) the account approved, held in this page's memory only`,
    signTypedData: (eip712, primaryType, message) =>
      key.signTypedData({ domain: domainOf(eip712), types: typesFor(eip712, primaryType), primaryType, message }),
  };
}

interface Eip1193 { request(arguments_: { method: string; params?: unknown[] }): Promise<unknown> }

export function injectedWallet(): Eip1193 | null {
  return (window as unknown as { ethereum?: Eip1193 }).ethereum ?? null;
}

/** A signer through the browser's wallet: it asks the wallet for each signature. */
export async function walletSigner(provider: Eip1193): Promise<Signer> {
  const accounts = (await provider.request({ method: "eth_requestAccounts" })) as string[];
  if (!accounts.length) throw new Error("The wallet gave no account.");
  const address = getAddress(accounts[0]);
  return {
    address,
    kind: "wallet",
    description: "your browser wallet (EIP-1193): it shows and signs each request; no key reaches this page",
    async signTypedData(eip712, primaryType, message) {
      const typedData = {
        types: { EIP712Domain: eip712.types.EIP712Domain, ...typesFor(eip712, primaryType) },
        primaryType,
        domain: eip712.domain,
        message,
      };
      const text = JSON.stringify(typedData, (_, value) => (typeof value === "bigint" ? value.toString() : value));
      return (await provider.request({ method: "eth_signTypedData_v4", params: [address, text] })) as string;
    },
  };
}

const VAULT_ABI = [
  { type: "function", name: "deposit", stateMutability: "nonpayable", inputs: [{ name: "token", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
  { type: "function", name: "depositNative", stateMutability: "payable", inputs: [], outputs: [] },
] as const;
const ERC20_ABI = [
  { type: "function", name: "approve", stateMutability: "nonpayable", inputs: [{ name: "spender", type: "address" }, { name: "amount", type: "uint256" }], outputs: [{ type: "bool" }] },
  { type: "function", name: "allowance", stateMutability: "view", inputs: [{ name: "owner", type: "address" }, { name: "spender", type: "address" }], outputs: [{ type: "uint256" }] },
] as const;

/** How long the page waits for the wallet's `approve` to be mined before the deposit. */
const APPROVE_WAIT_MS = 180_000;
const APPROVE_POLL_MS = 1_000;

/** Waits until the transaction `hash` is mined; refuses if it reverted or took too long. */
async function waitForReceipt(provider: Eip1193, hash: string): Promise<void> {
  const deadline = Date.now() + APPROVE_WAIT_MS;
  for (;;) {
    const receipt = (await provider.request({ method: "eth_getTransactionReceipt", params: [hash] })) as { status?: string } | null;
    if (receipt) {
      if (receipt.status !== "0x1") throw new Error(`the token refused the approve (${hash})`);
      return;
    }
    if (Date.now() > deadline) throw new Error(`the approve ${hash} was not mined within ${APPROVE_WAIT_MS / 1000} s`);
    await new Promise((done) => setTimeout(done, APPROVE_POLL_MS));
  }
}

/**
 * A vault deposit from the user's own wallet: for a token, `approve` when the allowance is
 * short, waiting for it to be mined (a wallet estimates the deposit's gas against the chain as
 * it is, and the deposit reverts without the allowance), then `deposit`; for the native asset,
 * `depositNative` with value. Returns the deposit's transaction hash; the venue credits it
 * after its confirmations.
 */
export async function depositFromWallet(
  provider: Eip1193, chainId: string, from: string, vault: string, token: string | null, amountUnits: bigint,
): Promise<string> {
  const wanted = `0x${BigInt(chainId).toString(16)}`;
  const current = (await provider.request({ method: "eth_chainId" })) as string;
  if (BigInt(current) !== BigInt(wanted)) {
    await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: wanted }] });
  }
  if (token === null) {
    return (await provider.request({
      method: "eth_sendTransaction",
      params: [{ from, to: vault, value: `0x${amountUnits.toString(16)}`, data: encodeFunctionData({ abi: VAULT_ABI, functionName: "depositNative" }) }],
    })) as string;
  }
  const allowance = (await provider.request({
    method: "eth_call",
    params: [{ to: token, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "allowance", args: [from as Hex, vault as Hex] }) }, "latest"],
  })) as string;
  if (BigInt(allowance === "0x" ? 0 : allowance) < amountUnits) {
    const approve = (await provider.request({
      method: "eth_sendTransaction",
      params: [{ from, to: token, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [vault as Hex, amountUnits] }) }],
    })) as string;
    await waitForReceipt(provider, approve);
  }
  return (await provider.request({
    method: "eth_sendTransaction",
    params: [{ from, to: vault, data: encodeFunctionData({ abi: VAULT_ABI, functionName: "deposit", args: [token as Hex, amountUnits] }) }],
  })) as string;
}

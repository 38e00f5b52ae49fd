//! Who signs: an injected browser wallet (EIP-1193, through a viem client, which asks it
//! for `eth_signTypedData_v4`), a private key the user pasted, or a session key acting as the
//! account's agent; a key is held in viem's account object only (never stored, never sent, never
//! logged). Each is the TypeScript client's signer with the words the page shows; what is signed
//! and sent is the client's (`api.ts`): the request carries `account`, `nonce`, `expiry` and
//! `signature`, never a key. Also the vault deposit sent from the wallet, a chain transaction.

import { privateKeyToAccount } from "viem/accounts";
import { createClient, custom, encodeFunctionData, getAddress, type Hex } from "viem";
import {
  keySigner as clientKeySigner, NATIVE_TOKEN, requestWithdrawalData, walletSigner as clientWalletSigner,
} from "../../clients/typescript/src/index";
import type { Signer } from "./api";

/** A signer over a pasted key. The key lives only in viem's account object. */
export function keySigner(privateKey: string): Signer {
  const text = privateKey.trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) throw new Error("A private key is 0x followed by 64 hex digits.");
  const signing = clientKeySigner(text);
  return {
    address: signing.address,
    kind: "key",
    description: "a key held in this page's memory only: it is never stored and never sent; reload the page to forget it",
    signing,
  };
}

/**
 * A signer for `account` over a key the account approved as its agent (a session key the page
 * made): it signs the account's orders with its own key, and the venue lets it trade, never move
 * funds. The key lives only in viem's account object.
 */
export function agentSigner(privateKey: Hex, account: string): Signer & { readonly agent: string } {
  const signing = privateKeyToAccount(privateKey);
  return {
    address: account,
    agent: signing.address,
    kind: "key",
    description: `a session key (agent ${signing.address}) the account approved, held in this page's memory only`,
    signing,
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
  // A bare viem client over the wallet: the client's walletSigner needs signTypedData alone.
  const wallet = createClient({ transport: custom(provider as Parameters<typeof custom>[0]) });
  return {
    address,
    kind: "wallet",
    description: "your browser wallet (EIP-1193): it shows and signs each request; no key reaches this page",
    signing: clientWalletSigner(wallet, address),
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
 * A withdrawal asked of the vault itself from the user's own wallet (`requestWithdrawal`,
 * contract version 5): what to do when the venue does not answer. Returns its transaction hash.
 */
export async function requestFromWallet(
  provider: Eip1193, chainId: string, from: string, vault: string, token: string | null, amountUnits: bigint,
): Promise<string> {
  await switchChain(provider, chainId);
  const data = requestWithdrawalData((token ?? NATIVE_TOKEN) as Hex, amountUnits);
  return (await provider.request({ method: "eth_sendTransaction", params: [{ from, to: vault, data }] })) as string;
}

/** Asks the wallet to switch to `chainId` when it is on another. */
async function switchChain(provider: Eip1193, chainId: string): Promise<void> {
  const wanted = `0x${BigInt(chainId).toString(16)}`;
  const current = (await provider.request({ method: "eth_chainId" })) as string;
  if (BigInt(current) !== BigInt(wanted)) {
    await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: wanted }] });
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
  await switchChain(provider, chainId);
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

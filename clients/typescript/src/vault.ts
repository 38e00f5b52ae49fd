/**
 * What an account sends to its venue's vault from its own wallet, with no venue in the way: a
 * withdrawal asked for on chain (`requestWithdrawal(token, amount)`, contract version 5). The
 * venue must serve it within the vault's request period (a day by default), cancelling the
 * account's orders as needed, or anyone may freeze the vault and every account exits. This
 * module builds and sends the one call through a viem wallet client; it signs nothing else and
 * reads no key.
 */

import { encodeFunctionData, type Address, type Hash, type Hex } from "viem";

/** The part of the vault's ABI an account calls itself. */
export const VAULT_REQUEST_ABI = [{
  type: "function", name: "requestWithdrawal", stateMutability: "nonpayable",
  inputs: [{ name: "token", type: "address" }, { name: "amount", type: "uint256" }],
  outputs: [{ name: "requestId", type: "uint256" }],
}] as const;

/** The zero address: the chain's native asset. */
export const NATIVE_TOKEN: Address = "0x0000000000000000000000000000000000000000";

/** What sends the account's transaction: any viem wallet client with an account and a chain (or
 * anything with the same `sendTransaction`). */
export interface TransactionSender {
  sendTransaction(transaction: { to: Address; data: Hex }): Promise<Hash>;
}

/** The call data of `requestWithdrawal(token, units)`. */
export function requestWithdrawalData(token: Address, units: bigint): Hex {
  return encodeFunctionData({ abi: VAULT_REQUEST_ABI, functionName: "requestWithdrawal", args: [token, units] });
}

/** Sends `requestWithdrawal(token, units)` to `vault` from the wallet's account; the hash. */
export async function requestWithdrawal(wallet: TransactionSender, vault: Address, token: Address, units: bigint): Promise<Hash> {
  return wallet.sendTransaction({ to: vault, data: requestWithdrawalData(token, units) });
}

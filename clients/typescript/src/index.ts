/** dexd's TypeScript client: REST (`DexdClient`), local signing (`keySigner`, any viem account)
 * and live streams that survive (`DexdStream`). */
export {
  DexdClient, MAX_SUBACCOUNT, subaccountAddress, type ClientOptions, type OrderTerms, type TwapTerms,
} from "./client.js";
export { DOMAIN_NAME, DOMAIN_VERSION, pinnedEip712, REQUEST_TYPES, SigningRefused } from "./domain.js";
export { ApiError } from "./errors.js";
export { canonicalDecimal, keySigner, signBatch, signRequest, walletSigner, type SignedFields, type Signer } from "./signing.js";
export {
  bookChecksum, DexdStream, type StreamBook, type StreamHandler, type StreamMessage, type StreamOptions, type StreamStatus,
  type WebSocketConstructor,
} from "./stream.js";
export type * from "./types.js";
export { NATIVE_TOKEN, requestWithdrawal, requestWithdrawalData, VAULT_REQUEST_ABI, type TransactionSender } from "./vault.js";

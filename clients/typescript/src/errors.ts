/**
 * The contract's error body as an exception: every failed call throws an `ApiError` with the
 * HTTP status, the contract's `code`, its message and the field it is about. A server that cannot
 * be reached is status 0, code `UNREACHABLE`.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** Whether the same request may succeed later (429, 503 or unreachable). */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status === 503;
  }
}

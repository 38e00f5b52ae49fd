//! TWAP orders on the page (contract version 5): the form that starts one on the pair shown, and
//! the account's TWAPs (running first, then the last finished ones) with a cancel for each
//! running one. It signs through the account's trading signer and reads the TWAPs again when the
//! account's views are refreshed; the slices themselves appear as orders in the account's views.
//! It keeps no state of its own beyond the form.

import { describe, reader, writer, type Signer, type Twap, type Venue } from "./api";
import { canonical } from "./decimal";
import { button, dateTime, element, fill, row } from "./dom";

export interface TwapCallbacks {
  announce(text: string): void;
  fail(text: string): void;
  /** The venue shown and the signer of the account's orders (its subaccount's, when one is picked). */
  current(): { venue: Venue | null; signer: Signer | null };
}

export class Twaps {
  constructor(private readonly callbacks: TwapCallbacks) {
    element<HTMLFormElement>("twap-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.start();
    });
  }

  /** Shows the form when someone signs. */
  enable(signed: boolean): void {
    element<HTMLButtonElement>("start-twap").disabled = !signed;
  }

  /** Reads the account's TWAPs again. */
  async refresh(): Promise<void> {
    const { venue, signer } = this.callbacks.current();
    if (!venue || !signer) return this.render([]);
    try {
      this.render(await reader(venue.chainId).twaps(signer.address));
    } catch (error) {
      this.callbacks.fail(`TWAPs: ${describe(error)}`);
    }
  }

  private async start(): Promise<void> {
    const { venue, signer } = this.callbacks.current();
    if (!venue || !signer) return this.callbacks.fail("Connect a wallet or paste a key to start a TWAP.");
    const direction = (element<HTMLSelectElement>("twap-direction").value === "sell" ? "sell" : "buy") as "buy" | "sell";
    const rawAmount = element<HTMLInputElement>("twap-amount").value.trim();
    const amount = canonical(rawAmount);
    if (!amount) return this.callbacks.fail(`The TWAP's amount "${rawAmount}" is not a positive decimal number.`);
    const rawLimit = element<HTMLInputElement>("twap-limit").value.trim();
    const limitPrice = rawLimit ? canonical(rawLimit) : null;
    if (rawLimit && !limitPrice) return this.callbacks.fail(`The limit price "${rawLimit}" is not a positive decimal number.`);
    const durationMs = Number(element<HTMLSelectElement>("twap-duration").value);
    const intervalMs = Number(element<HTMLSelectElement>("twap-interval").value);
    const submit = element<HTMLButtonElement>("start-twap");
    submit.disabled = true;
    try {
      const twap = await writer(venue.chainId, signer).addTwap({
        symbol: venue.pair.symbol, direction, amount, durationMs, intervalMs, limitPrice: limitPrice ?? undefined,
      });
      this.callbacks.announce(
        `TWAP started: ${twap.direction} ${twap.amount} ${twap.symbol} in ${twap.slicesPlanned} slices, one every ${twap.intervalMs / 1000} s.`,
      );
      await this.refresh();
    } catch (error) {
      this.callbacks.fail(`TWAP refused: ${describe(error)}`);
    } finally {
      submit.disabled = false;
    }
  }

  private async cancel(twap: Twap, cancelButton: HTMLButtonElement): Promise<void> {
    const { venue, signer } = this.callbacks.current();
    if (!venue || !signer) return;
    cancelButton.disabled = true;
    try {
      await writer(venue.chainId, signer).cancelTwap(twap.twapId);
      this.callbacks.announce(`Cancelled the TWAP ${twap.direction} ${twap.amount} ${twap.symbol}; it filled ${twap.filled}.`);
      await this.refresh();
    } catch (error) {
      cancelButton.disabled = false;
      this.callbacks.fail(`Cancel refused: ${describe(error)}`);
    }
  }

  private render(twaps: Twap[]): void {
    const rows = twaps.map((twap) =>
      row([
        twap.direction,
        twap.symbol,
        `${twap.filled} of ${twap.amount}`,
        `${twap.slices} of ${twap.slicesPlanned}`,
        twap.limitPrice ?? "3 % from the best",
        twap.status,
        twap.nextSliceAt === null ? dateTime(twap.updatedAt) : `next ${dateTime(twap.nextSliceAt)}`,
        twap.status === "running"
          ? button("Cancel", `Cancel the TWAP ${twap.direction} ${twap.amount} ${twap.symbol}`, (cancelButton) => void this.cancel(twap, cancelButton))
          : "",
      ], { "data-twap-id": twap.twapId, "data-status": twap.status }),
    );
    fill("twaps", rows, "No TWAPs.");
  }
}

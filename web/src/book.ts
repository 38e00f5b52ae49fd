//! The live order book of one pair as the page shows it (each level with its order count): a
//! stream snapshot, then updates applied level by level. The TypeScript client's stream has
//! checked each message first (its sequence follows the last, its CRC-32 matches) and takes the
//! book again on its own when one does not. No rendering here.

import type { Level } from "./api";
import { compare } from "./decimal";

export class LiveBook {
  bids = new Map<string, Level>();
  asks = new Map<string, Level>();
  sequence = -1;

  reset(bids: Level[], asks: Level[], sequence: number): void {
    this.bids = new Map(bids.map((level) => [level.price, level]));
    this.asks = new Map(asks.map((level) => [level.price, level]));
    this.sequence = sequence;
  }

  /** Applies an update the stream checked. */
  apply(bids: Level[], asks: Level[], sequence: number): void {
    for (const [side, levels] of [[this.bids, bids], [this.asks, asks]] as const) {
      for (const level of levels) {
        if (level.amount === "0") side.delete(level.price);
        else side.set(level.price, level);
      }
    }
    this.sequence = sequence;
  }

  sortedBids(): Level[] {
    return [...this.bids.values()].sort((a, b) => compare(b.price, a.price));
  }

  sortedAsks(): Level[] {
    return [...this.asks.values()].sort((a, b) => compare(a.price, b.price));
  }
}

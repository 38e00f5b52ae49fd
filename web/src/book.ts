//! The live order book of one pair: a stream snapshot, then updates applied level by level.
//! Each message's CRC-32 is checked against the book it leaves; a mismatch or a sequence gap
//! is reported so the page can subscribe again. No rendering here.

import type { Level } from "./api";
import { compare } from "./decimal";
import { crc32 } from "./crc32";

/** How many levels of each side the checksum covers (the contract's 25). */
const CHECKSUM_LEVELS = 25;

export class LiveBook {
  bids = new Map<string, Level>();
  asks = new Map<string, Level>();
  sequence = -1;

  reset(bids: Level[], asks: Level[], sequence: number): void {
    this.bids = new Map(bids.map((level) => [level.price, level]));
    this.asks = new Map(asks.map((level) => [level.price, level]));
    this.sequence = sequence;
  }

  /** Applies an update; false when it does not follow the last message (a gap). */
  apply(bids: Level[], asks: Level[], sequence: number, previousSequence: number): boolean {
    if (previousSequence !== this.sequence) return false;
    for (const [side, levels] of [[this.bids, bids], [this.asks, asks]] as const) {
      for (const level of levels) {
        if (level.amount === "0") side.delete(level.price);
        else side.set(level.price, level);
      }
    }
    this.sequence = sequence;
    return true;
  }

  sortedBids(): Level[] {
    return [...this.bids.values()].sort((a, b) => compare(b.price, a.price));
  }

  sortedAsks(): Level[] {
    return [...this.asks.values()].sort((a, b) => compare(a.price, b.price));
  }

  checksum(): number {
    const text = [...this.sortedBids().slice(0, CHECKSUM_LEVELS), ...this.sortedAsks().slice(0, CHECKSUM_LEVELS)]
      .map((level) => `${level.price}:${level.amount}`)
      .join("|");
    return crc32(text);
  }
}

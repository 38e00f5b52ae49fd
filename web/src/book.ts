//! The live book's levels in the order the page shows them, best first. The book itself is the
//! TypeScript client's (`DexdStream.book`): it applies each message only after checking that its
//! sequence follows the last and its CRC-32 matches, and takes the book again when one does not.
//! No rendering here.

import type { Level, StreamBook } from "./api";
import { compare } from "./decimal";

/** The bids, highest price first (none without a book). */
export function sortedBids(book: StreamBook | undefined): Level[] {
  return book ? [...book.bids.values()].sort((a, b) => compare(b.price, a.price)) : [];
}

/** The asks, lowest price first (none without a book). */
export function sortedAsks(book: StreamBook | undefined): Level[] {
  return book ? [...book.asks.values()].sort((a, b) => compare(a.price, b.price)) : [];
}

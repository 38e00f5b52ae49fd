//! Exact decimal text for the page: canonical forms (what the venue signs and prints), products
//! and sums with BigInt, never floating point. Display only; the venue decides every amount.

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** A decimal as an integer of units at `scale` decimals. */
export interface Exact { units: bigint; scale: number }

export function parse(text: string): Exact | null {
  const match = DECIMAL.exec(text.trim());
  if (!match) return null;
  const fraction = match[2] ?? "";
  return { units: BigInt(match[1] + fraction), scale: fraction.length };
}

export function format(value: Exact): string {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, "0");
  let text = value.scale === 0 ? digits : `${digits.slice(0, -value.scale)}.${digits.slice(-value.scale)}`;
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return negative && text !== "0" ? `-${text}` : text;
}

/** Two decimals as units at one common scale (the larger of theirs), or null. */
function aligned(left: string, right: string): { a: bigint; b: bigint; scale: number } | null {
  const x = parse(left);
  const y = parse(right);
  if (!x || !y) return null;
  const scale = Math.max(x.scale, y.scale);
  return { a: x.units * 10n ** BigInt(scale - x.scale), b: y.units * 10n ** BigInt(scale - y.scale), scale };
}

/** The venue's canonical form of a decimal the user typed ("1500.50" → "1500.5"), or null. */
export function canonical(text: string): string | null {
  const value = parse(text);
  return value ? format(value) : null;
}

export function multiply(left: string, right: string): string | null {
  const a = parse(left);
  const b = parse(right);
  if (!a || !b) return null;
  return format({ units: a.units * b.units, scale: a.scale + b.scale });
}

export function compare(left: string, right: string): number {
  const both = aligned(left, right);
  if (!both) return 0;
  return both.a < both.b ? -1 : both.a > both.b ? 1 : 0;
}

export function subtract(left: string, right: string): string | null {
  const both = aligned(left, right);
  return both ? format({ units: both.a - both.b, scale: both.scale }) : null;
}

/** The units of `text` for an asset of `decimals` (a vault deposit's amount), or null. */
export function toUnits(text: string, decimals: number): bigint | null {
  const value = parse(text);
  if (!value || value.scale > decimals) return null;
  return value.units * 10n ** BigInt(decimals - value.scale);
}

/** The change from `from` to `to` in percent, two decimals, signed ("+1.25 %"). */
export function percentChange(from: string, to: string): string | null {
  const both = aligned(from, to);
  if (!both || both.a === 0n) return null;
  const basisPoints = ((both.b - both.a) * 10000n) / both.a;
  const text = format({ units: basisPoints, scale: 2 });
  return `${basisPoints >= 0n ? "+" : ""}${text} %`;
}

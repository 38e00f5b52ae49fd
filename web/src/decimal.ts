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
  let digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, "0");
  let text = value.scale === 0 ? digits : `${digits.slice(0, -value.scale)}.${digits.slice(-value.scale)}`;
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  digits = text;
  return negative && digits !== "0" ? `-${digits}` : digits;
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
  const a = parse(left);
  const b = parse(right);
  if (!a || !b) return 0;
  const scale = Math.max(a.scale, b.scale);
  const x = a.units * 10n ** BigInt(scale - a.scale);
  const y = b.units * 10n ** BigInt(scale - b.scale);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function subtract(left: string, right: string): string | null {
  const a = parse(left);
  const b = parse(right);
  if (!a || !b) return null;
  const scale = Math.max(a.scale, b.scale);
  return format({
    units: a.units * 10n ** BigInt(scale - a.scale) - b.units * 10n ** BigInt(scale - b.scale),
    scale,
  });
}

/** The units of `text` for an asset of `decimals` (a vault deposit's amount), or null. */
export function toUnits(text: string, decimals: number): bigint | null {
  const value = parse(text);
  if (!value || value.scale > decimals) return null;
  return value.units * 10n ** BigInt(decimals - value.scale);
}

/** The change from `from` to `to` in percent, two decimals, signed ("+1.25 %"). */
export function percentChange(from: string, to: string): string | null {
  const a = parse(from);
  const b = parse(to);
  if (!a || !b || a.units === 0n) return null;
  const scale = Math.max(a.scale, b.scale);
  const x = a.units * 10n ** BigInt(scale - a.scale);
  const y = b.units * 10n ** BigInt(scale - b.scale);
  const basisPoints = ((y - x) * 10000n) / x;
  const text = format({ units: basisPoints, scale: 2 });
  return `${basisPoints >= 0n ? "+" : ""}${text} %`;
}

/**
 * Kubernetes resource quantities (`"16"`, `"1.5"`, `"80Gi"`, `"250m"`, `"1e3"`),
 * compared exactly like `resource.Quantity.Cmp`: a quantity is kept as the
 * fraction numerator / denominator, so `"1Gi"` and `"1073741824"` are equal and
 * no rounding makes two different values compare equal.
 */
export interface Quantity {
  readonly numerator: bigint;
  readonly denominator: bigint;
  /** The value as a float, for linear interpolation (property sorters) only. */
  readonly approximate: number;
}

// The grammar of k8s.io/apimachinery/pkg/api/resource (quantity.go):
// <signedNumber><suffix>, suffix binary SI (Ki..Ei), decimal SI (n u m "" k M G T P E)
// or a decimal exponent (e3, E-2). The exponent is tried first: "1E3" is 1000, "1E" is 10^18.
const QUANTITY = /^([+-]?)(\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;
const BINARY: Record<string, bigint> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
// Beyond any real cluster property; keeps a hostile "1e999999999" from building a huge bigint.
const MAX_EXPONENT = 64;

/** The quantity a string denotes, or undefined when it is not one. */
export function parseQuantity(text: string): Quantity | undefined {
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const [, sign, number, exponent, suffix] = match as unknown as [string, string, string, string?, string?];
  const [whole, fraction = ''] = number.split('.');
  let numerator = BigInt(`${whole || '0'}${fraction}`);
  let denominator = 1n;
  let power = -fraction.length;
  if (exponent !== undefined) {
    const e = Number(exponent);
    if (Math.abs(e) > MAX_EXPONENT) return undefined;
    power += e;
  } else if (suffix !== undefined) {
    if (suffix in BINARY) numerator <<= BINARY[suffix]!;
    else power += DECIMAL[suffix]!;
  }
  if (power >= 0) numerator *= 10n ** BigInt(power);
  else denominator = 10n ** BigInt(-power);
  if (sign === '-') numerator = -numerator;
  const approximate = Number(numerator) / Number(denominator);
  // Hundreds of digits overflow a float; the sign still orders it for interpolation.
  return { numerator, denominator, approximate: Number.isNaN(approximate) ? 0 : approximate };
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  // Sorters compare every cluster's value: when the floats differ by far more
  // than their rounding error (a few ulps) they order the exact values too,
  // which avoids bigint products. Overflowed or underflowed floats go exact.
  const x = a.approximate;
  const y = b.approximate;
  if (isReliable(x, a) && isReliable(y, b) && Math.abs(x - y) > 1e-9 * Math.max(Math.abs(x), Math.abs(y))) {
    return x < y ? -1 : 1;
  }
  const left = a.numerator * b.denominator;
  const right = b.numerator * a.denominator;
  return left < right ? -1 : left > right ? 1 : 0;
}

function isReliable(approximate: number, q: Quantity): boolean {
  const magnitude = Math.abs(approximate);
  return magnitude === 0 ? q.numerator === 0n : magnitude >= 1e-290 && magnitude < Infinity;
}

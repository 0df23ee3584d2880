/**
 * The provider's four-digit result codes, by category (protocols/kyc-provider.md): outcomes are
 * decided by category, never by single numbers elsewhere in the code. Codes not listed fall
 * back by their leading digits as the provider groups them.
 */
export const ResultCategory = {
  APPROVED: 'APPROVED',
  /** Provisionally approved / under human review: a final result for the same job follows. */
  PROVISIONAL: 'PROVISIONAL',
  REJECTED: 'REJECTED',
  ERROR: 'ERROR',
} as const;
export type ResultCategory = (typeof ResultCategory)[keyof typeof ResultCategory];

const KNOWN: Record<string, ResultCategory> = {
  '0810': ResultCategory.APPROVED, // document verified
  '0811': ResultCategory.APPROVED,
  '0812': ResultCategory.APPROVED,
  '0813': ResultCategory.APPROVED,
  '0814': ResultCategory.PROVISIONAL, // under human review
  '0815': ResultCategory.PROVISIONAL,
  '0816': ResultCategory.PROVISIONAL,
  '0907': ResultCategory.REJECTED, // possible spoof
  '1022': ResultCategory.REJECTED, // no match
  '1023': ResultCategory.REJECTED, // not found
  '0001': ResultCategory.ERROR, // data invalid
  '2213': ResultCategory.ERROR, // missing parameter
};

export function categoryOf(resultCode: string): ResultCategory {
  const known = KNOWN[resultCode];
  if (known) return known;
  if (/^08\d\d$/.test(resultCode)) return ResultCategory.APPROVED;
  if (/^(09|10)\d\d$/.test(resultCode)) return ResultCategory.REJECTED;
  return ResultCategory.ERROR;
}

/**
 * The provider's verdicts, by category (protocols/kyc-provider.md, "Mapping verdicts"): v2
 * four-digit result codes and v3 statuses both map here, and outcomes are decided by category,
 * never by single codes elsewhere in the code. An unknown code or status is under review (a
 * person looks), never approved.
 */
export const ResultCategory = {
  APPROVED: 'APPROVED',
  /** Provisionally approved / under human review: a final result for the same job follows. */
  PROVISIONAL: 'PROVISIONAL',
  REJECTED: 'REJECTED',
  ERROR: 'ERROR',
} as const;
export type ResultCategory = (typeof ResultCategory)[keyof typeof ResultCategory];

/** v2 `ResultCode`s by the provider's own categories. */
const V2_CODES: Record<string, ResultCategory> = {
  '0810': ResultCategory.APPROVED, // document verified
  '1012': ResultCategory.APPROVED, // valid ID, exact match
  '1020': ResultCategory.APPROVED, // exact match
  '1021': ResultCategory.APPROVED, // partial match
  '0814': ResultCategory.PROVISIONAL, // under human review; a final callback follows
  '1022': ResultCategory.REJECTED, // no match
  '1023': ResultCategory.REJECTED, // ID number not found
  '1013': ResultCategory.REJECTED, // invalid ID
  '0907': ResultCategory.REJECTED, // possible spoof
  '1014': ResultCategory.ERROR, // unsupported ID type
  '1015': ResultCategory.ERROR, // ID authority unavailable
  '1016': ResultCategory.ERROR, // need to activate product
  '0001': ResultCategory.ERROR, // data invalid (assumed)
};

/** A v2 result code's category: request errors (22xx to 24xx, no job made) are errors. */
export function categoryOf(resultCode: string): ResultCategory {
  // Own keys only: a "code" such as `constructor` is unknown, not Object's.
  if (Object.hasOwn(V2_CODES, resultCode)) return V2_CODES[resultCode]!;
  if (/^2[234]\d\d$/.test(resultCode)) return ResultCategory.ERROR;
  return ResultCategory.PROVISIONAL;
}

/** The statuses `GET /v3/status/{job_id}` and v3 callbacks carry (no result codes). */
export type V3Status = 'clear' | 'attention' | 'block' | 'error' | 'processing' | 'not_found';

const V3_STATUSES: Record<string, ResultCategory> = {
  clear: ResultCategory.APPROVED,
  attention: ResultCategory.PROVISIONAL,
  block: ResultCategory.REJECTED,
  error: ResultCategory.ERROR,
};

/** A final v3 status's category (`processing` and `not_found` are not verdicts: the client reads them as states). */
export function categoryOfV3Status(status: string): ResultCategory {
  return Object.hasOwn(V3_STATUSES, status) ? V3_STATUSES[status]! : ResultCategory.PROVISIONAL;
}

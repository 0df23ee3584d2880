/**
 * Whether a provider's final answer is about the applicant's own job. A v2 lookup is by our
 * job id and the applicant's user id, so its answer is. A v3 lookup is by a job id someone named
 * (the client SDK's report, or an unsigned callback header), so its answer must name that very
 * job and the applicant as its user: anything else (another user's job, an answer without a
 * user) is not this application's and must never settle it.
 */
export function isApplicantsJob(
  answer: { providerJobId?: string; userId?: string },
  application: { api_version: string | null; user_id: string },
  askedJobId: string | undefined,
): boolean {
  if ((application.api_version ?? 'v2') !== 'v3') return true;
  return askedJobId !== undefined && answer.providerJobId === askedJobId && answer.userId === application.user_id;
}

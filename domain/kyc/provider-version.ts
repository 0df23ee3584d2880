/**
 * The provider API version a KYC job runs on (spec 4.2, 9). The client sends the versions it
 * can run in X-Provider-Api-Versions, comma-separated, in any order; the job starts on the
 * newest one the server also supports and keeps it for life. Omitted, empty or unrecognised: v2.
 */
export const PROVIDER_API_VERSIONS = ['v2', 'v3'] as const;
export type ProviderApiVersion = (typeof PROVIDER_API_VERSIONS)[number];
export const DEFAULT_PROVIDER_API_VERSION: ProviderApiVersion = 'v2';

const rank = (version: ProviderApiVersion) => PROVIDER_API_VERSIONS.indexOf(version);

export function negotiateProviderApiVersion(header: string | undefined): ProviderApiVersion {
  const offered = (header ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token): token is ProviderApiVersion => (PROVIDER_API_VERSIONS as readonly string[]).includes(token));
  if (offered.length === 0) return DEFAULT_PROVIDER_API_VERSION;
  return offered.reduce((newest, version) => (rank(version) > rank(newest) ? version : newest));
}

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

/**
 * The values a client sent in X-Provider-Api-Versions, as a set in one canonical text (what GET
 * verification records and a POST is compared with, spec 4.2): every comma-separated value,
 * recognised or not, trimmed and lower-cased as negotiation reads them, distinct and sorted, joined
 * by commas. Order, spaces, case and repeats make no difference; an omitted or empty header is ''.
 */
export function sentProviderApiVersions(header: string | undefined): string {
  const values = new Set(
    (header ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
  return [...values].sort().join(',');
}

/** What GET verification recorded of the header it was last sent. */
export interface RequirementsRead {
  /** `sentProviderApiVersions` of its header; null when no GET recorded it. */
  sent_api_versions: string | null;
  /** The version it negotiated; the only record of a GET answered before the values were kept. */
  negotiated_api_version: ProviderApiVersion | null;
}

/**
 * How a submission's X-Provider-Api-Versions differs from what GET verification was last sent
 * (spec 4.2: "Sending different values to GET and POST gets the capture rejected"), or undefined
 * when it does not: the values are compared as sets; with no GET before it, nothing differs (the
 * POST negotiates on its own); a GET recorded before its values were kept is compared by the
 * version it negotiated.
 */
export function versionsDifference(read: RequirementsRead, header: string | undefined): string | undefined {
  const shown = (values: string) => (values ? `"${values.replace(/,/g, ', ')}"` : 'no values');
  if (read.sent_api_versions !== null) {
    const sent = sentProviderApiVersions(header);
    if (sent === read.sent_api_versions) return undefined;
    return `GET verification was sent ${shown(read.sent_api_versions)}; this request sends ${shown(sent)}`;
  }
  const version = negotiateProviderApiVersion(header);
  if (read.negotiated_api_version === null || read.negotiated_api_version === version) return undefined;
  return `the requirements were read for ${read.negotiated_api_version}; this request negotiates ${version}`;
}

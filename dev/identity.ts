import { readFile, writeFile } from 'node:fs/promises';
import { generateServiceSigningKey } from '../api/auth/service-keys';
import type { Config } from '../config';
import { DEMO, type SeedOptions } from '../db/seeds/demo';
import type { RunningIdentityProvider } from '../simulators/identity';

/**
 * Points the service's authentication at the development identity provider, for `npm start`
 * and the tests: the backend scheme's JWKS and issuer, and two financing issuers (one whose
 * merchant access is in our database, one answered over HTTP). Values given in the environment
 * win, so the same start can point at a real identity provider.
 */
export function withDevIdentityProvider(config: Config, idp: RunningIdentityProvider): Config {
  const configuredBackend = config.AUTH_JWKS_URL !== undefined && config.AUTH_ISSUER !== undefined;
  return {
    ...config,
    AUTH_JWKS_URL: configuredBackend ? config.AUTH_JWKS_URL : idp.jwksUrl('backend'),
    AUTH_ISSUER: configuredBackend ? config.AUTH_ISSUER : idp.issuer('backend'),
    FINANCING_ISSUERS:
      config.FINANCING_ISSUERS.length > 0
        ? config.FINANCING_ISSUERS
        : [
            { issuer: idp.issuer('financing'), jwks_url: idp.jwksUrl('financing'), resource_access: 'database' },
            {
              issuer: idp.issuer('financing-http'),
              jwks_url: idp.jwksUrl('financing-http'),
              resource_access: { url: `${idp.url}/resource-access` },
            },
          ],
  };
}

/** Seed options tying the demo partner and merchant to the development identity provider. */
export function devSeedOptions(idp: RunningIdentityProvider): SeedOptions {
  return { partnerJwksUrl: idp.jwksUrl('partner'), financingIssuer: idp.issuer('financing') };
}

/** Grants the demo merchant's financing subject access at the HTTP resource-access service too. */
export async function grantDemoMerchantOverHttp(idp: RunningIdentityProvider): Promise<void> {
  const response = await fetch(`${idp.url}/resource-access/grants`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      issuer: idp.issuer('financing-http'),
      subject: DEMO.merchant.financingSubject,
      merchant_id: DEMO.merchant.id,
      permissions: [...DEMO.merchant.permissions],
    }),
  });
  if (!response.ok) throw new Error(`resource-access grant refused: ${response.status}`);
}

/**
 * The service's signing key: SERVICE_SIGNING_KEY when set; otherwise the one kept in `file`
 * (made on first use), so tokens issued before a restart stay valid.
 */
export async function serviceSigningKey(config: Config, file?: string): Promise<string> {
  if (config.SERVICE_SIGNING_KEY) return config.SERVICE_SIGNING_KEY;
  const saved = file ? await readFile(file, 'utf8').catch(() => undefined) : undefined;
  if (saved) return saved;
  const key = JSON.stringify(await generateServiceSigningKey());
  if (file) await writeFile(file, key, { mode: 0o600 });
  return key;
}

import { type Realm, requestToken } from '../../simulators/identity';
import { harness } from './harness';

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A backend bearer token from the development identity provider (the real verification path). */
export function backendToken(
  sub: string | null,
  claims: Record<string, unknown> = {},
  options: { expiresIn?: number; kid?: string } = {},
) {
  const { idp, config } = harness();
  return requestToken(idp.url, 'backend', { sub, aud: config.AUTH_AUDIENCE, ...claims }, options);
}

export function financingToken(
  realm: Extract<Realm, 'financing' | 'financing-http'>,
  sub: string,
  claims: Record<string, unknown> = {},
) {
  const { idp, config } = harness();
  return requestToken(idp.url, realm, { sub, aud: config.FINANCING_AUDIENCE, ...claims });
}

/** The demo partner's signed JWT, as it would present it to /v1/auth/exchange. */
export function partnerAssertion(claims: Record<string, unknown> = {}, options: { expiresIn?: number } = {}) {
  const { idp, config } = harness();
  return requestToken(
    idp.url,
    'partner',
    { sub: 'demo-partner-client', aud: config.PARTNER_EXCHANGE_AUDIENCE, ...claims },
    options,
  );
}

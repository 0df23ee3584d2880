/**
 * The addresses of the self-service resources and their actions (the resources' url,
 * confirm_url and authorize_url), absolute under the service's public base URL.
 */
const base = (publicBaseUrl: string | undefined) => (publicBaseUrl ?? '').replace(/\/+$/, '');

export const emailVerificationUrl = (publicBaseUrl: string | undefined, id: string) =>
  `${base(publicBaseUrl)}/v1/user/accounts/current/email/verifications/${id}`;
/** Where the e-mailed link's token is confirmed (POST); the e-mailed link is this with `?token=`. */
export const emailConfirmUrl = (publicBaseUrl: string | undefined, id: string) =>
  `${emailVerificationUrl(publicBaseUrl, id)}/confirm`;

export const phoneChangeUrl = (publicBaseUrl: string | undefined, id: string) =>
  `${base(publicBaseUrl)}/v1/user/accounts/current/phone/changes/${id}`;
export const phoneAuthorizeUrl = (publicBaseUrl: string | undefined, id: string) =>
  `${phoneChangeUrl(publicBaseUrl, id)}/authorize`;
export const phoneConfirmUrl = (publicBaseUrl: string | undefined, id: string) =>
  `${phoneChangeUrl(publicBaseUrl, id)}/confirm`;

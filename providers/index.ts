/**
 * The provider clients the API and activities are built with. Each later area adds its client
 * (KYC provider, mobile money, SMS, e-mail, bank, object storage) behind a small interface here,
 * so tests and `npm start` hand in clients pointed at the simulators.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Providers {}

export function createProviders(): Providers {
  return {};
}

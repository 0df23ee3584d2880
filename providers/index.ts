import type { Config } from '../config';
import { createKycProviderClient, type KycProviderClient } from './kyc/client';
import { createMobileMoneyClient } from './mobile-money/client';
import { configuredCertificate } from './mobile-money/security-credential';
import type { MobileMoneyClient } from './mobile-money/protocol';

/**
 * The provider clients the API and activities are built with, each behind a small interface.
 * Tests and `npm start` point them at the simulators; nothing else differs.
 */
export interface Providers {
  kyc: KycProviderClient;
  mobileMoney: MobileMoneyClient;
}

/** The named settings, or an error naming the missing ones (npm start and the tests run simulators). */
function required<K extends keyof Config>(config: Config, keys: K[]): { [P in K]-?: NonNullable<Config[P]> } {
  const missing = keys.filter((key) => !config[key]);
  if (missing.length > 0)
    throw new Error(
      `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required (npm start runs simulators)`,
    );
  return config as unknown as { [P in K]-?: NonNullable<Config[P]> };
}

export function createProviders(config: Config): Providers {
  const kyc = required(config, ['KYC_PROVIDER_URL', 'KYC_PARTNER_ID', 'KYC_API_KEY']);
  const mm = required(config, [
    'MOBILE_MONEY_URL',
    'MOBILE_MONEY_CONSUMER_KEY',
    'MOBILE_MONEY_CONSUMER_SECRET',
    'MOBILE_MONEY_SHORT_CODE',
    'MOBILE_MONEY_PASSKEY',
    'MOBILE_MONEY_INITIATOR_NAME',
    'MOBILE_MONEY_INITIATOR_PASSWORD',
  ]);
  return {
    kyc: createKycProviderClient({
      baseUrl: kyc.KYC_PROVIDER_URL,
      partnerId: kyc.KYC_PARTNER_ID,
      apiKey: kyc.KYC_API_KEY,
      ca: config.KYC_PROVIDER_CA,
      uploadHosts: config.KYC_UPLOAD_HOSTS,
    }),
    mobileMoney: createMobileMoneyClient({
      baseUrl: mm.MOBILE_MONEY_URL,
      consumerKey: mm.MOBILE_MONEY_CONSUMER_KEY,
      consumerSecret: mm.MOBILE_MONEY_CONSUMER_SECRET,
      shortCode: mm.MOBILE_MONEY_SHORT_CODE,
      passkey: mm.MOBILE_MONEY_PASSKEY,
      initiatorName: mm.MOBILE_MONEY_INITIATOR_NAME,
      initiatorPassword: mm.MOBILE_MONEY_INITIATOR_PASSWORD,
      certificate: configuredCertificate(config),
    }),
  };
}

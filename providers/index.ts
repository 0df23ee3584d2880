import type { Config } from '../config';
import { createKycProviderClient, type KycProviderClient } from './kyc/client';

/**
 * The provider clients the API and activities are built with, each behind a small interface.
 * Tests and `npm start` point them at the simulators; nothing else differs.
 */
export interface Providers {
  kyc: KycProviderClient;
}

export function createProviders(config: Config): Providers {
  const { KYC_PROVIDER_URL, KYC_PARTNER_ID, KYC_API_KEY } = config;
  if (!KYC_PROVIDER_URL || !KYC_PARTNER_ID || !KYC_API_KEY) {
    throw new Error('KYC_PROVIDER_URL, KYC_PARTNER_ID and KYC_API_KEY are required (npm start runs a simulator)');
  }
  return { kyc: createKycProviderClient({ baseUrl: KYC_PROVIDER_URL, partnerId: KYC_PARTNER_ID, apiKey: KYC_API_KEY }) };
}

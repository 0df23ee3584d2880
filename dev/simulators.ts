import type { Config } from '../config';
import { type RunningKycSimulator, startKycSimulator } from '../providers/simulators/kyc-provider';

/** Development credentials of the simulated identity-verification provider (never real ones). */
const DEV_KYC = { partnerId: '2101', apiKey: 'dev-kyc-api-key-not-a-secret' };

/**
 * Starts the provider simulators `npm start` and the tests talk to, and points the service's
 * configuration at them unless the environment names real providers.
 */
export async function startProviderSimulators(config: Config, ports: { kyc?: number } = {}): Promise<{ config: Config; kyc?: RunningKycSimulator; close(): Promise<void> }> {
  if (config.KYC_PROVIDER_URL) return { config, close: async () => {} };
  const kyc = await startKycSimulator({ ...DEV_KYC, port: ports.kyc });
  return {
    config: { ...config, KYC_PROVIDER_URL: kyc.url, KYC_PARTNER_ID: DEV_KYC.partnerId, KYC_API_KEY: DEV_KYC.apiKey },
    kyc,
    close: () => kyc.close(),
  };
}

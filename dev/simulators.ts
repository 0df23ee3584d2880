import type { Config } from '../config';
import { DEMO, type SeedOptions } from '../db/seeds/demo';
import { type RunningIdentityProvider, startIdentityProvider } from '../providers/simulators/identity-provider';
import { type RunningKycSimulator, startKycSimulator } from '../providers/simulators/kyc-provider';
import { devSeedOptions, grantDemoMerchantOverHttp, withDevIdentityProvider } from './identity';

/** Development credentials of the simulated identity-verification provider (never real ones). */
const DEV_KYC = { partnerId: '2101', apiKey: 'dev-kyc-api-key-not-a-secret' };

export interface DevelopmentProviders {
  /** The configuration pointed at the simulators (values given in the environment win). */
  config: Config;
  idp: RunningIdentityProvider;
  /** Absent when KYC_PROVIDER_URL names a real provider. */
  kyc?: RunningKycSimulator;
  seedOptions: SeedOptions;
  close(): Promise<void>;
}

/**
 * Starts what `npm start`, the tests and the benchmarks talk to instead of real providers: the
 * development identity provider (with the demo merchant's HTTP resource-access grant) and the
 * identity-verification provider simulator, and points the configuration at them.
 */
export async function startDevelopmentProviders(
  config: Config,
  options: { idpPort?: number; idpKeysFile?: string; kycPort?: number } = {},
): Promise<DevelopmentProviders> {
  const idp = await startIdentityProvider({ port: options.idpPort, keysFile: options.idpKeysFile, partnerIssuer: DEMO.partner.issuer });
  const kyc = config.KYC_PROVIDER_URL ? undefined : await startKycSimulator({ ...DEV_KYC, port: options.kycPort });
  const close = async () => {
    await Promise.all([idp.close(), kyc?.close()]);
  };
  try {
    await grantDemoMerchantOverHttp(idp);
  } catch (error) {
    await close();
    throw error;
  }
  const withIdp = withDevIdentityProvider(config, idp);
  return {
    config: kyc ? { ...withIdp, KYC_PROVIDER_URL: kyc.url, KYC_PARTNER_ID: DEV_KYC.partnerId, KYC_API_KEY: DEV_KYC.apiKey } : withIdp,
    idp,
    kyc,
    seedOptions: devSeedOptions(idp),
    close,
  };
}

import type { Config } from '../config';
import { DEMO, type SeedOptions } from '../db/seeds/demo';
import { type RunningIdentityProvider, startIdentityProvider } from '../providers/identity/simulator';
import { type RunningKycSimulator, startKycSimulator } from '../providers/kyc/simulator';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../providers/mobile-money/simulator';
import { devSeedOptions, grantDemoMerchantOverHttp, withDevIdentityProvider } from './identity';

/** Development credentials of the simulated identity-verification provider (never real ones). */
const DEV_KYC = { partnerId: '2101', apiKey: 'dev-kyc-api-key-not-a-secret' };
/** And of the simulated mobile-money provider. */
export const DEV_MOBILE_MONEY = {
  consumerKey: 'dev-consumer-key',
  consumerSecret: 'dev-consumer-secret-not-a-secret',
  shortCode: '174379',
  passkey: 'dev-passkey-not-a-secret',
  initiatorName: 'dev-initiator',
  securityCredential: 'dev-security-credential-not-a-secret',
};

export interface DevelopmentProviders {
  /** The configuration pointed at the simulators (values given in the environment win). */
  config: Config;
  idp: RunningIdentityProvider;
  /** Absent when KYC_PROVIDER_URL names a real provider. */
  kyc?: RunningKycSimulator;
  /** Absent when MOBILE_MONEY_URL names a real provider. */
  mobileMoney?: RunningMobileMoneySimulator;
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
  options: { idpPort?: number; idpKeysFile?: string; kycPort?: number; mobileMoneyPort?: number } = {},
): Promise<DevelopmentProviders> {
  const idp = await startIdentityProvider({
    port: options.idpPort,
    keysFile: options.idpKeysFile,
    partnerIssuer: DEMO.partner.issuer,
  });
  const kyc = config.KYC_PROVIDER_URL ? undefined : await startKycSimulator({ ...DEV_KYC, port: options.kycPort });
  const mobileMoney = config.MOBILE_MONEY_URL
    ? undefined
    : await startMobileMoneySimulator({ ...DEV_MOBILE_MONEY, port: options.mobileMoneyPort });
  const close = async () => {
    await Promise.all([idp.close(), kyc?.close(), mobileMoney?.close()]);
  };
  try {
    await grantDemoMerchantOverHttp(idp);
  } catch (error) {
    await close();
    throw error;
  }
  const withIdp = withDevIdentityProvider(config, idp);
  const withKyc = kyc
    ? { ...withIdp, KYC_PROVIDER_URL: kyc.url, KYC_PARTNER_ID: DEV_KYC.partnerId, KYC_API_KEY: DEV_KYC.apiKey }
    : withIdp;
  return {
    config: mobileMoney ? { ...withKyc, ...mobileMoneySettings(mobileMoney.url) } : withKyc,
    idp,
    kyc,
    mobileMoney,
    seedOptions: devSeedOptions(idp),
    close,
  };
}

/** The configuration that points the service at a mobile-money simulator with the development credentials. */
export function mobileMoneySettings(url: string) {
  return {
    MOBILE_MONEY_URL: url,
    MOBILE_MONEY_CONSUMER_KEY: DEV_MOBILE_MONEY.consumerKey,
    MOBILE_MONEY_CONSUMER_SECRET: DEV_MOBILE_MONEY.consumerSecret,
    MOBILE_MONEY_SHORT_CODE: DEV_MOBILE_MONEY.shortCode,
    MOBILE_MONEY_PASSKEY: DEV_MOBILE_MONEY.passkey,
    MOBILE_MONEY_INITIATOR_NAME: DEV_MOBILE_MONEY.initiatorName,
    MOBILE_MONEY_SECURITY_CREDENTIAL: DEV_MOBILE_MONEY.securityCredential,
  };
}

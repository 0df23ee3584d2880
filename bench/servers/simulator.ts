import { DEV_MOBILE_MONEY } from '../../dev/simulators';
import { startKycSimulator } from '../../simulators/kyc';
import { startMobileMoneySimulator } from '../../simulators/mobile-money';

/**
 * A provider simulator in a process of its own, so neither the load generator nor the service
 * shares its event loop. BENCH_SIMULATOR picks it: `kyc` (credentials KYC_PARTNER_ID and
 * KYC_API_KEY from the environment) or `mobile-money` (the development credentials, callbacks at
 * once). Prints `{url, certificate}` as one JSON line (the certificate: what B2C credentials are
 * encrypted with).
 */
async function main() {
  const simulator =
    process.env.BENCH_SIMULATOR === 'mobile-money'
      ? await startMobileMoneySimulator({ ...DEV_MOBILE_MONEY, callbackDelayMs: 0 })
      : await startKycSimulator({ partnerId: process.env.KYC_PARTNER_ID!, apiKey: process.env.KYC_API_KEY! });
  process.once('SIGTERM', () => void simulator.close().then(() => process.exit(0)));
  const certificate = 'certificate' in simulator ? simulator.certificate : undefined;
  console.log(JSON.stringify({ url: simulator.url, certificate }));
}
void main();

import { DEV_MOBILE_MONEY } from '../../dev/simulators';
import { startKycSimulator } from '../../providers/kyc/simulator';
import { startMobileMoneySimulator } from '../../providers/mobile-money/simulator';

/**
 * A provider simulator in a process of its own, so neither the load generator nor the service
 * shares its event loop. BENCH_SIMULATOR picks it: `kyc` (credentials KYC_PARTNER_ID and
 * KYC_API_KEY from the environment) or `mobile-money` (the development credentials, callbacks at
 * once). Prints `{url}` as one JSON line.
 */
async function main() {
  const simulator =
    process.env.BENCH_SIMULATOR === 'mobile-money'
      ? await startMobileMoneySimulator({ ...DEV_MOBILE_MONEY, callbackDelayMs: 0 })
      : await startKycSimulator({ partnerId: process.env.KYC_PARTNER_ID!, apiKey: process.env.KYC_API_KEY! });
  process.once('SIGTERM', () => void simulator.close().then(() => process.exit(0)));
  console.log(JSON.stringify({ url: simulator.url }));
}
void main();

import { startKycSimulator } from '../../providers/simulators/kyc-provider';

/**
 * The identity-verification provider simulator in a process of its own, so neither the load
 * generator nor the worker shares its event loop. Credentials from the environment; prints
 * `{url}` as one JSON line.
 */
async function main() {
  const simulator = await startKycSimulator({ partnerId: process.env.KYC_PARTNER_ID!, apiKey: process.env.KYC_API_KEY! });
  process.once('SIGTERM', () => void simulator.close().then(() => process.exit(0)));
  console.log(JSON.stringify({ url: simulator.url }));
}
void main();

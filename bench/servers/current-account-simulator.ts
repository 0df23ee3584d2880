import { DEV_CURRENT_ACCOUNT } from '../../dev/simulators';
import { startBankSimulator } from '../../simulators/bank';
import { startEmailSimulator } from '../../simulators/email';
import { startSmsSimulator } from '../../simulators/sms';

/**
 * One of the current-account providers' simulators in a process of its own (as
 * servers/simulator.ts runs the KYC and mobile-money ones), with the development credentials:
 * BENCH_SIMULATOR is `sms`, `email` or `bank`. Prints `{url}` as one JSON line.
 */
async function main() {
  const { sms, email, bank } = DEV_CURRENT_ACCOUNT;
  const which = process.env.BENCH_SIMULATOR;
  const simulator =
    which === 'sms'
      ? await startSmsSimulator({ ...sms, senderIds: [sms.senderId] })
      : which === 'email'
        ? await startEmailSimulator({ apiKey: email.apiKey, verifiedSenders: [email.from] })
        : which === 'bank'
          ? await startBankSimulator(bank)
          : undefined;
  if (!simulator) throw new Error(`BENCH_SIMULATOR must be sms, email or bank, not ${which}`);
  process.once('SIGTERM', () => void simulator.close().then(() => process.exit(0)));
  console.log(JSON.stringify({ url: simulator.url }));
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});

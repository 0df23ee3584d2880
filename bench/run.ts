import { authBench } from './auth';
import { foundationBench } from './foundation';
import { kycStatusBench } from './kyc';
import { moneyBench } from './money';
import { kycSweepBench } from './sweep';

/** `npm run bench`: every benchmark, each printing its ratio against a baseline from the same run. */
async function main() {
  await foundationBench();
  await authBench();
  await kycStatusBench();
  await moneyBench();
  await kycSweepBench();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

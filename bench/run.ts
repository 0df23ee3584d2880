import { authBench } from './auth';
import { foundationBench } from './foundation';

/** `npm run bench`: every benchmark, each printing its ratio against a baseline from the same run. */
async function main() {
  await foundationBench();
  await authBench();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

import { seedIds } from '../db/seeds/demo';

/** `npm run --silent seed:ids`: the demo data's stable ids as one JSON object. */
process.stdout.write(`${JSON.stringify(seedIds(), null, 2)}\n`);

import { generateServiceSigningKey } from '../api/auth/service-keys';

/** `npm run --silent signing-key`: a new RS256 private JWK for SERVICE_SIGNING_KEY, on stdout. */
generateServiceSigningKey()
  .then((key) => process.stdout.write(`${JSON.stringify(key)}\n`))
  .catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });

import { spawn } from 'node:child_process';
import path from 'node:path';
import { harness } from './harness';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A development script (dev/*.ts) run with tsx as `npm run` runs it, against the test run's
 * service: its database, identity provider, API and SMS gateway simulator (where a staged
 * customer's flows go). Asynchronous: the scripts call the identity provider, which this very
 * process serves.
 */
export function runScript(
  script: string,
  args: string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const { databaseUrl, idp, baseUrl, config } = harness();
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), [script, ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        DEV_IDP_PORT: new URL(idp.url).port,
        AUTH_AUDIENCE: config.AUTH_AUDIENCE,
        PORT: new URL(baseUrl).port,
        SMS_SIMULATOR_PORT: new URL(config.SMS_PROVIDER_URL!).port,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

import { inconsistentLoans } from '../db/loans/servicing-reads';
import { cliDatabase, runCli } from './cli';

/**
 * `npm run --silent loans:check`: every disbursed loan whose ledger receivables (principal,
 * interest, penalties) differ from its schedule's outstanding total, from the view
 * loan_ledger_consistency. Prints them as JSON lines and exits 1; prints a summary and exits 0
 * when every loan agrees.
 */
runCli(async (config) => {
  const db = cliDatabase(config);
  try {
    const mismatches = await inconsistentLoans(db);
    const { rows } = await db.raw<{ rows: { loans: string }[] }>(
      'select count(*) as loans from loan_ledger_consistency',
    );
    for (const loan of mismatches) process.stdout.write(`${JSON.stringify(loan)}\n`);
    process.stdout.write(`${rows[0]!.loans} disbursed loans checked, ${mismatches.length} inconsistent\n`);
    if (mismatches.length > 0) process.exitCode = 1;
  } finally {
    await db.destroy();
  }
});

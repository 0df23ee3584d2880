import { randomUUID } from 'node:crypto';
import { type BenchApplicant, seedApplicants, seedBorrowers, seedUsers } from '../seed';
import type { ApiClient, Caller, Reply } from './client-flows';
import type { ChaosDeployment } from './deployment';

/**
 * What the handlers suite's scenarios share: the deployment, a client, and customers written
 * straight to Postgres as the bench seeds do (each with its own phone and ID number, whose last
 * digit 0 the simulators pay or approve).
 */
export interface World {
  deployment: ChaosDeployment;
  api: ApiClient;
  /** A backend token of the demo organization's operations user (loans.service: waivers, reversals). */
  operator: Caller;
  customer(kind: 'borrower' | 'applicant' | 'user', deposit?: number): Promise<Customer>;
}

export interface Customer extends BenchApplicant {
  caller: Caller;
}

/**
 * One workflow type's message handlers under concurrency: `prepare` makes a run that waits for
 * messages; `send` sends n of them at once (the suite restarts the worker meanwhile) and answers
 * the check, run once everything settled, which lists what no serial order of those messages
 * would have given (none expected).
 */
export interface Scenario {
  /** The workflow type whose handlers it drives. */
  type: string;
  /** What goes n at a time. */
  sends: string;
  prepare(world: World): Promise<Prepared>;
}
export interface Prepared {
  send(n: number): Promise<Check>;
}
export type Check = () => Promise<string[]>;

export function createWorld(deployment: ChaosDeployment, api: ApiClient, operator: Caller): World {
  let made = 0;
  return {
    deployment,
    api,
    operator,
    async customer(kind, deposit = 0) {
      made += 1;
      const c: BenchApplicant = {
        id: randomUUID(),
        current: randomUUID(),
        credit: randomUUID(),
        kycApplication: randomUUID(),
        phone: `+25479${String(made).padStart(6, '0')}0`,
        idNumber: String(40_000_000 + made * 10),
      };
      const { db, organizationId } = deployment;
      if (kind === 'applicant') await seedApplicants(db, organizationId, [c]);
      else if (kind === 'user') await seedUsers(db, organizationId, [c]);
      else await seedBorrowers(db, organizationId, [c], deposit);
      return { ...c, caller: { token: await deployment.token(c.id) } };
    },
  };
}

/** A run's OTP submissions, one right code among wrong ones, as the API answered them. */
export interface OtpBurst {
  answers: Reply[];
  /** Which answer is the right code's. */
  right: number;
}

/**
 * What a serial order of the submissions allows: counted wrong codes each with its own
 * attempts-left, at most one accepted, at most one locking (and only when the attempts are used
 * up), never both; refusals and no 5xx. `accepted` and `locked` tell how the run must end.
 */
export function otpSerialProblems(burst: OtpBurst, maxAttempts: number): { problems: string[]; accepted: boolean } {
  const problems: string[] = [];
  const left = burst.answers.flatMap((a) => {
    const m = /Wrong code: (\d+) attempts? left/.exec(String(a.body.description));
    return a.status === 400 && m ? [Number(m[1])] : [];
  });
  const locked = burst.answers.filter((a) => a.status === 429 && /Too many wrong codes/.test(a.text)).length;
  const accepted = burst.answers[burst.right]!.status === 200;
  const others200 = burst.answers.filter((a, i) => a.status === 200 && i !== burst.right).length;
  if (new Set(left).size !== left.length) problems.push(`attempts-left answered twice: ${left.join(',')}`);
  if (left.some((l) => l < 1 || l >= maxAttempts)) problems.push(`attempts-left out of range: ${left.join(',')}`);
  if (locked > 1) problems.push(`${locked} submissions locked the code`);
  if (locked === 1 && left.length !== maxAttempts - 1) problems.push(`locked after ${left.length} wrong codes`);
  if (accepted && locked > 0) problems.push('the right code accepted and the code locked');
  if (others200 > 0) problems.push(`${others200} wrong codes answered 200`);
  for (const a of burst.answers)
    if (a.status >= 500 || a.status === 0) problems.push(`answered ${a.status}: ${a.text}`);
  return { problems, accepted };
}

import { z } from 'zod';
import { type BankClient, type BankOperation, type MobileNumberChange, type MobileNumberChangeBody } from './protocol';
import { type Answer, type BankTransport, failure, nonEmpty, ok, rejected, rejection, unreadable } from './transport';

/**
 * Mobile-number changes: asking the bank to change a customer's mobile number under our
 * reference, and reading where the change stands. ./client.ts composes them with the
 * onboarding over ./transport.ts.
 */

const changeAnswer = z.object({
  partnerReference: z.string(),
  status: z.enum(['PENDING', 'COMPLETED', 'REJECTED']),
  rejection,
});

function changeOf(operation: BankOperation, write: boolean, answer: Answer, reference: string): MobileNumberChange {
  const parsed = changeAnswer.safeParse(answer.body);
  if (!parsed.success || parsed.data.partnerReference !== reference) throw unreadable(operation, write, answer);
  if (parsed.data.status === 'REJECTED') throw rejected(operation, parsed.data.rejection?.code);
  return { status: parsed.data.status };
}

export function createMobileNumberChanges({
  authorized,
}: BankTransport): Pick<BankClient, 'changeMobileNumber' | 'mobileNumberChangeStatus'> {
  return {
    async changeMobileNumber({ reference, bankCustomerId, newMobileNumber }) {
      nonEmpty(reference, 'reference');
      const payload: MobileNumberChangeBody = { partnerReference: reference, newMobileNumber };
      const answer = await authorized(
        'changeMobileNumber',
        `/v1/customers/${nonEmpty(bankCustomerId, 'bankCustomerId')}/mobile-number-changes`,
        { method: 'POST', idempotencyKey: reference, payload },
      );
      if (!ok(answer)) throw failure('changeMobileNumber', true, answer);
      return changeOf('changeMobileNumber', true, answer, reference);
    },

    async mobileNumberChangeStatus({ reference, bankCustomerId }) {
      const answer = await authorized(
        'mobileNumberChangeStatus',
        `/v1/customers/${nonEmpty(bankCustomerId, 'bankCustomerId')}/mobile-number-changes/by-reference/${nonEmpty(reference, 'reference')}`,
        { method: 'GET' },
      );
      if (!ok(answer)) throw failure('mobileNumberChangeStatus', false, answer);
      return changeOf('mobileNumberChangeStatus', false, answer, reference);
    },
  };
}

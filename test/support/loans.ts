import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { harness } from './harness';
import { call, type Reply } from './http';
import { fund, newCustomer } from './money';

/**
 * A fresh borrower of the demo organization: a customer with a current and a credit account,
 * KYC approved unless told otherwise, and money in the current account for collateral.
 */
export async function newBorrower(
  options: { kyc?: 'APPROVED' | 'none'; funds?: number; status?: 'WAITING_LIST' } = {},
) {
  const customer = await newCustomer(0);
  const { db } = harness();
  if (options.kyc !== 'none')
    await db('kyc_applications').insert({
      id: randomUUID(),
      organization_id: DEMO.organizations.demo.id,
      user_id: customer.user.id,
      status: 'APPROVED',
      outcome: 'PASS',
      verification_completed_at: new Date(),
    });
  if (options.status) await db('users').where({ id: customer.user.id }).update({ status: options.status });
  if ((options.funds ?? 500_000) > 0) await fund(customer.current, options.funds ?? 500_000);
  return customer;
}

export const offerFor = (
  headers: Record<string, string>,
  path = `/v1/accounts/loan/applications/${DEMO.organizations.demo.id}`,
  json: unknown = {},
) => call('POST', path, { headers, json });

export const applyPartnerB = (
  headers: Record<string, string>,
  body: {
    application_id: string;
    loan_amount: number;
    tenure: { duration: number; unit: string };
    collateral_amount: number;
  },
  idempotencyKey?: string,
): Promise<Reply> =>
  call('POST', '/v1/accounts/loan/applications/partner-b', {
    headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) },
    json: body,
  });

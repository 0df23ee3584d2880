import { z } from 'zod';
import { PAYOUT_FEES } from '../../domain/mobile-money/transactions';

/** The Transaction resource (spec 2) and the Money it carries, as the API answers them. */
export const Money = z
  .strictObject({
    value: z.number().int().positive().meta({ description: 'Integer minor units: 150000 with KES is KES 1,500.00' }),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .meta({ description: 'ISO 4217 code (KES)' }),
  })
  .meta({ id: 'Money' });

/** A fee: Money that may be 0 (collections carry none). */
const Fee = z
  .strictObject({
    value: z.number().int().nonnegative().meta({ description: 'Integer minor units; 0 for collections' }),
    currency: Money.shape.currency,
  })
  .meta({ id: 'Fee' });

export const Transaction = z
  .object({
    id: z.uuid(),
    resource_id: z.string().meta({ description: 'trx_<opaque>' }),
    status: z.enum(['PENDING', 'CONFIRMED', 'POSTED', 'FAILED']).meta({
      description:
        'PENDING (transacted_at set: accepted by this service) → CONFIRMED (confirmed_at: the provider reported the money moved) → ' +
        'POSTED (posted_at: in the ledger; final). Or FAILED (failed_at and failure_reason; final, nothing left held). ' +
        'Pushes and payouts are confirmed and posted in one step today (PENDING → POSTED, both timestamps set); clients should still accept CONFIRMED.',
    }),
    mobilemoney_transaction_id: z
      .string()
      .nullable()
      .meta({ description: "The provider's receipt; null until confirmed, and when only a status query confirmed it" }),
    amount: Money,
    fee_amount: Fee.meta({
      description: `Collections: 0. Payouts, by amount band (KES): ${PAYOUT_FEES.map((b) => `up to ${b.upToShillings}: ${b.feeShillings}`).join('; ')}`,
    }),
    failure_reason: z
      .string()
      .nullable()
      .meta({
        description:
          'CANCELLED_BY_USER (1032), PHONE_UNREACHABLE (1037), INSUFFICIENT_FUNDS (1, or our ledger for a payout), WRONG_PIN (2001), EXPIRED (1019), ' +
          'PUSH_REJECTED, PAYOUT_REJECTED, PROVIDER_INSUFFICIENT_FUNDS (B2C 1), RECIPIENT_NOT_REGISTERED (2040), QUEUE_TIMEOUT, NO_RESULT, PROVIDER_ERROR',
      }),
    transacted_at: z.string().nullable(),
    confirmed_at: z.string().nullable(),
    posted_at: z.string().nullable(),
    failed_at: z.string().nullable(),
    details: z
      .object({
        type: z.enum(['PAYBILL', 'BUY_GOODS', 'B2C', 'REVERSAL', 'WAIVER']),
        direction: z.enum(['COLLECTION', 'PAYOUT', 'ADJUSTMENT']),
        account_id: z.uuid(),
        paybill_number: z.string().optional(),
        till_number: z.string().optional(),
        account_reference: z.string().optional(),
        reverses_id: z.uuid().optional().meta({ description: 'A REVERSAL: the repayment it reverses' }),
        loan_id: z.uuid().optional().meta({ description: 'A WAIVER: the loan whose amounts were forgiven' }),
        reason: z.string().optional().meta({ description: "A REVERSAL or WAIVER: the operator's reason" }),
      })
      .meta({
        description:
          'How the money moves: a paybill or Buy Goods (till) push prompt, or a B2C payout; in the installment transaction ' +
          "lists also an operator's REVERSAL of a repayment or WAIVER of amounts owed (direction ADJUSTMENT, no provider involved)",
      }),
  })
  .meta({ id: 'Transaction' });

export { transactionView } from '../../domain/mobile-money/views';
export type { TransactionView } from '../../domain/mobile-money/views';

import { z } from 'zod';
import type { SendMoneyStatusFacts } from '../../domain/mobile-money/send-money-status';

/**
 * The provider's callbacks, read: push-prompt results, B2C results or queue timeouts, and the
 * Results of Transaction Status queries. What a callback proves is decided elsewhere
 * (domain/mobile-money/callbacks.ts, domain/mobile-money/send-money-status.ts).
 */
export interface StkCallback {
  merchantRequestId: string;
  checkoutRequestId: string;
  /** '0' is paid; '1032', '1037', '1019', '1', '2001' are ordinary refusals; may be non-numeric. */
  resultCode: string;
  resultDesc: string;
  metadata?: {
    /** As sent (a number, sometimes text): checked by domain/mobile-money/callbacks.ts. */
    amount?: string | number;
    receipt?: string;
    /** `YYYYMMDDHHmmss`, Nairobi time (fromProviderTimestamp). */
    transactionDate?: string;
    /** As the provider sent it (`2547...`, sometimes masked): checked by domain/mobile-money/callbacks.ts. */
    phone?: string;
  };
}

export interface B2cResult {
  resultType: number;
  resultCode: string;
  resultDesc: string;
  originatorConversationId: string;
  conversationId: string;
  transactionId?: string;
  /** ResultParameters by Key: TransactionReceipt, TransactionAmount, ReceiverPartyPublicName... */
  parameters: Record<string, string | number>;
  referenceData: Record<string, string | number>;
}

/** A Transaction Status Result, read (protocol.ts, "Transaction Status"): what domain/mobile-money/send-money-status.ts judges. */
export type TransactionStatusResult = SendMoneyStatusFacts;

/** A callback body that does not have the protocol's shape: answer it 400 and keep waiting. */
export class MalformedCallbackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedCallbackError';
  }
}

const providerValue = z.union([z.number(), z.string()]);
const stkCallbackBody = z.object({
  Body: z.object({
    stkCallback: z.object({
      MerchantRequestID: z.string().min(1),
      CheckoutRequestID: z.string().min(1),
      ResultCode: z.union([z.number().int(), z.string().min(1)]),
      ResultDesc: z.string(),
      CallbackMetadata: z
        .object({ Item: z.array(z.object({ Name: z.string(), Value: providerValue.nullish() })) })
        .optional(),
    }),
  }),
});
const keyValues = z
  .union([
    z.array(z.object({ Key: z.string(), Value: providerValue.nullish() })),
    z.object({ Key: z.string(), Value: providerValue.nullish() }),
  ])
  .transform((v) => (Array.isArray(v) ? v : [v]));
const b2cResultBody = z.object({
  Result: z.object({
    ResultType: z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]),
    // Logged and stored: the provider's codes are a few characters ("SFC_IC0003").
    ResultCode: z.union([z.number().int(), z.string().min(1).max(64)]),
    ResultDesc: z.string(),
    OriginatorConversationID: z.string().min(1),
    ConversationID: z.string().min(1),
    TransactionID: z.string().optional(),
    ResultParameters: z.object({ ResultParameter: keyValues }).optional(),
    ReferenceData: z.object({ ReferenceItem: keyValues }).optional(),
  }),
});

function parseCallback<S extends z.ZodType>(schema: S, body: unknown, what: string): z.output<S> {
  let input = body;
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    try {
      input = JSON.parse(body.toString());
    } catch {
      throw new MalformedCallbackError(`${what}: not JSON`);
    }
  }
  const parsed = schema.safeParse(input);
  // prettifyError names paths and expectations, never values: safe to log.
  if (!parsed.success) throw new MalformedCallbackError(`${what}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Reads a push callback (`{Body: {stkCallback}}`), as JSON text or parsed. */
export function parseStkCallback(body: unknown): StkCallback {
  const cb = parseCallback(stkCallbackBody, body, 'push callback').Body.stkCallback;
  const result: StkCallback = {
    merchantRequestId: cb.MerchantRequestID,
    checkoutRequestId: cb.CheckoutRequestID,
    resultCode: String(cb.ResultCode),
    resultDesc: cb.ResultDesc,
  };
  if (!cb.CallbackMetadata) return result;
  // Items are read by Name: their order is not promised, and Balance often comes without Value.
  const item = (name: string) => cb.CallbackMetadata?.Item.find((i) => i.Name === name)?.Value ?? undefined;
  const amount = item('Amount');
  const receipt = item('MpesaReceiptNumber');
  const date = item('TransactionDate');
  const phone = item('PhoneNumber');
  if (date !== undefined && !/^\d{14}$/.test(String(date)))
    throw new MalformedCallbackError('push callback: TransactionDate is not YYYYMMDDHHmmss');
  result.metadata = {
    ...(amount !== undefined && { amount }),
    ...(receipt !== undefined && { receipt: String(receipt) }),
    ...(date !== undefined && { transactionDate: String(date) }),
    ...(phone !== undefined && { phone: String(phone) }),
  };
  return result;
}

/** Reads a B2C result or queue timeout (`{Result}`), as JSON text or parsed. */
export function parseB2cResult(body: unknown): B2cResult {
  const r = parseCallback(b2cResultBody, body, 'B2C result').Result;
  const byKey = (items: { Key: string; Value?: string | number | null }[] = []) =>
    Object.fromEntries(
      items.filter((i) => i.Value !== undefined && i.Value !== null).map((i) => [i.Key, i.Value as string | number]),
    );
  return {
    resultType: r.ResultType,
    resultCode: String(r.ResultCode),
    resultDesc: r.ResultDesc,
    originatorConversationId: r.OriginatorConversationID,
    conversationId: r.ConversationID,
    ...(r.TransactionID !== undefined && { transactionId: r.TransactionID }),
    parameters: byKey(r.ResultParameters?.ResultParameter),
    referenceData: byKey(r.ReferenceData?.ReferenceItem),
  };
}

/** `2547... - Name`: a party name that is a customer's number (the credit party of a payout). */
const CUSTOMER_PARTY = /^254[17]\d{8}\b/;

/** Reads a Transaction Status Result (or the query's queue timeout), as JSON text or parsed. */
export function parseTransactionStatusResult(body: unknown): TransactionStatusResult {
  const r = parseCallback(b2cResultBody, body, 'status result').Result;
  const result: TransactionStatusResult = {
    resultCode: String(r.ResultCode),
    resultDesc: r.ResultDesc,
    queryOriginatorConversationId: r.OriginatorConversationID,
    queryConversationId: r.ConversationID,
  };
  const items = r.ResultParameters?.ResultParameter ?? [];
  if (items.length === 0) return result;
  // Keys are read without their spaces (the v1-era sample writes "Originator Conversation ID"),
  // and may repeat (the current page lists DebitPartyName twice): every value is kept.
  const values = (key: string) =>
    items
      .filter((i) => i.Key.replace(/\s+/g, '') === key && i.Value !== undefined && i.Value !== null)
      .map((i) => i.Value as string | number);
  const text = (key: string) => {
    const value = values(key).at(-1);
    return value === undefined ? undefined : String(value);
  };
  const parties = [...values('CreditPartyName'), ...values('DebitPartyName')].map(String);
  const finalised = text('FinalisedTime');
  const amount = values('Amount').at(-1);
  result.transaction = Object.fromEntries(
    Object.entries({
      status: text('TransactionStatus'),
      originatorConversationId: text('OriginatorConversationID'),
      conversationId: text('ConversationID'),
      receipt: text('ReceiptNo'),
      amount,
      creditParty: text('CreditPartyName') ?? parties.findLast((p) => CUSTOMER_PARTY.test(p)),
      finalisedTime: finalised !== undefined && /^\d{14}$/.test(finalised) ? finalised : undefined,
      reasonCode: text('ReasonCode'),
      reason: text('TransactionReason'),
    }).filter(([, v]) => v !== undefined),
  );
  return result;
}

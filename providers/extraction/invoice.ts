import { printable, reasonFor, retryAfterMs, safeCode } from './errors';
import {
  type AnalysisOutcome,
  type CheckedAnalyzeOperation,
  CurrencyFieldSchema,
  DateFieldSchema,
  type ExtractedInvoice,
  INVOICE_DOC_TYPES,
  isCalendarDate,
  MAX_DETAIL_CHARS,
  MINOR_UNIT_EXPONENTS,
  StringFieldSchema,
  toMinorUnits,
} from './protocol';

/**
 * What an analysis read back means for us: still running (with the wait Azure asks), failed (with
 * a merchant-facing reason), or succeeded, then our invoice (total in minor units of a currency we
 * take, issue and due dates in order, a few bounded details) or the reason the document gives
 * nothing usable. Every field goes through zod; nothing Azure sends is used unchecked.
 */

/** A string detail as Postgres jsonb takes it: no NUL, no lone surrogate, at most MAX_DETAIL_CHARS characters; undefined when nothing is left. */
function detailText(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const withoutNul = value.split(String.fromCharCode(0)).join('');
  const wellFormed = (withoutNul as string & { toWellFormed(): string }).toWellFormed();
  const chars = Array.from(printable(wellFormed, Number.MAX_SAFE_INTEGER));
  const kept = chars.slice(0, MAX_DETAIL_CHARS).join('');
  return kept.length > 0 ? kept : undefined;
}

const failed = (code: string, reason: string): AnalysisOutcome => ({ status: 'failed', code, reason });

/** A succeeded analysis as our invoice, or the reason it gives nothing usable. */
export function invoiceOf(operation: CheckedAnalyzeOperation): AnalysisOutcome {
  const documents = operation.analyzeResult?.documents;
  if (!operation.analyzeResult) return failed('UnusableNoResult', 'The extraction provider returned no analysis.');
  const document = documents?.find((d) => INVOICE_DOC_TYPES.includes(d.docType));
  const fields = document?.fields ?? {};
  if (!document || Object.keys(fields).length === 0)
    return failed(
      'UnusableNoInvoice',
      'The document does not look like an invoice: nothing an invoice carries was found.',
    );

  const currencyField = (name: string) => {
    const parsed = CurrencyFieldSchema.safeParse(fields[name]);
    return parsed.success ? parsed.data.valueCurrency : undefined;
  };
  const dateField = (name: string) => {
    const parsed = DateFieldSchema.safeParse(fields[name]);
    return parsed.success && isCalendarDate(parsed.data.valueDate) ? parsed.data.valueDate : undefined;
  };
  const stringField = (name: string) => {
    const parsed = StringFieldSchema.safeParse(fields[name]);
    return parsed.success ? detailText(parsed.data.valueString ?? parsed.data.content) : undefined;
  };

  const total = currencyField('InvoiceTotal');
  if (!total) return failed('UnusableNoTotal', 'No invoice total was found on the document.');
  // The resolved ISO 4217 code; a symbol only when it is itself a code we take ("KES", not "$").
  const named = [total.currencyCode, total.currencySymbol]
    .map((c) => c?.trim().toUpperCase())
    .find((c) => c !== undefined && /^[A-Z]{3}$/.test(c));
  if (!named) return failed('UnusableCurrency', 'The invoice total has no currency we could identify.');
  const exponent = MINOR_UNIT_EXPONENTS[named];
  if (exponent === undefined)
    return failed('UnusableCurrency', `The invoice's currency (${named}) is not one we accept.`);
  const amount = toMinorUnits(total.amount, exponent);
  if (!amount.ok) return failed('UnusableAmount', `The invoice total in ${named} ${amount.problem}.`);

  const issuedDate = dateField('InvoiceDate');
  if (!issuedDate) return failed('UnusableIssueDate', 'No issue date was found on the invoice.');
  const dueDate = dateField('DueDate');
  if (!dueDate) return failed('UnusableDueDate', 'No due date was found on the invoice.');
  if (dueDate < issuedDate)
    return failed('UnusableDates', `The invoice's due date (${dueDate}) is before its issue date (${issuedDate}).`);

  const details: ExtractedInvoice['details'] = {};
  const put = (key: string, value: string | number | undefined) => {
    if (value !== undefined) details[key] = value;
  };
  put('invoice_id', stringField('InvoiceId'));
  put('vendor_name', stringField('VendorName'));
  put('customer_name', stringField('CustomerName'));
  // Other amounts only in the total's currency (a mixed invoice says nothing we can add up).
  for (const [field, key] of [
    ['AmountDue', 'amount_due_minor_units'],
    ['SubTotal', 'sub_total_minor_units'],
    ['TotalTax', 'total_tax_minor_units'],
  ] as const) {
    const value = currencyField(field);
    const currency = (value?.currencyCode ?? named).trim().toUpperCase();
    const minor = value && currency === named ? toMinorUnits(value.amount, exponent) : undefined;
    if (minor?.ok) put(key, minor.minorUnits);
  }
  if (document.confidence !== undefined) put('confidence', Math.round(document.confidence * 1000) / 1000);
  return {
    status: 'succeeded',
    invoice: { amountMinorUnits: amount.minorUnits, currency: named, issuedDate, dueDate, details },
  };
}

/** A checked analyze operation as our outcome; `retryAfter` is the answer's Retry-After header. */
export function outcomeOf(operation: CheckedAnalyzeOperation, retryAfter: string | null | undefined): AnalysisOutcome {
  switch (operation.status) {
    case 'notStarted':
    case 'running': {
      const wait = retryAfterMs(retryAfter);
      return { status: 'running', ...(wait !== undefined && { retryAfterMs: wait }) };
    }
    case 'succeeded':
      return invoiceOf(operation);
    default: {
      const code =
        safeCode(operation.error?.innererror?.code) ??
        safeCode(operation.error?.code) ??
        (operation.status === 'failed' ? 'AnalysisFailed' : 'Canceled');
      return failed(code, reasonFor(code));
    }
  }
}

/** How one extraction of an invoice ended: what the run records on the invoice. */
export type ExtractionOutcome =
  | {
      status: 'EXTRACTED';
      amountMinorUnits: number;
      currency: string;
      issuedDate: string;
      dueDate: string;
      details: Record<string, unknown>;
    }
  | { status: 'FAILED'; reason: string }
  | { status: 'NOT_UPLOADED' };

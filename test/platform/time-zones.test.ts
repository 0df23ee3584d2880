import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { applicantHeaders, JPEG_BASE64, newApplicant, newApplication, settledStatus } from '../support/kyc';
import { newBorrower, takeLoan } from '../support/loans';
import { invoicePdf, readInvoice, registerInvoice, settledInvoice, uploadDocument } from '../support/financing';

/**
 * Spec 2: "dates are YYYY-MM-DD". A date is a calendar date, not an instant: the same answer
 * whatever zone the service's process runs in. The API and the worker run in this process, so
 * setting TZ here moves both (Node reads process.env.TZ again whenever it is set). Nairobi is the
 * zone our users run in (UTC+3: local midnight is the day before in UTC); Los Angeles is west of
 * UTC (UTC midnight is the day before locally); Kiritimati is as far east as zones go (UTC+14).
 */
const ZONES = ['Africa/Nairobi', 'America/Los_Angeles', 'Pacific/Kiritimati'];

/** Runs `body` with the process in `zone`, then puts the zone back. */
async function inZone<T>(zone: string, body: () => Promise<T>): Promise<T> {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    return await body();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

/** The calendar day `days` after `day` (both YYYY-MM-DD), by UTC arithmetic alone. */
const plusDays = (day: string, days: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

describe('spec 2 "dates are YYYY-MM-DD": every date reads and writes as the calendar date it is, whatever the process time zone', () => {
  let borrower: Awaited<ReturnType<typeof newBorrower>>;
  let startDate: string;
  let invoiceId: string;
  before(async function () {
    this.timeout(120_000);
    // Written while the process runs in Nairobi, read below in every zone.
    await inZone('Africa/Nairobi', async () => {
      borrower = await newBorrower();
      const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 3 });
      const loan = await harness()
        .db('loans')
        .where({ id: loanId })
        .first<{ start: string }>(harness().db.raw(`to_char(start_date, 'YYYY-MM-DD') as start`));
      startDate = loan.start;
      const document = await uploadDocument(invoicePdf({ 'Invoice date': '2026-11-01', 'Due date': '2026-12-01' }));
      const registered = await registerInvoice(document);
      assert.equal(registered.status, 201, registered.text);
      invoiceId = registered.body.id;
      assert.equal((await settledInvoice(invoiceId)).status, 'EXTRACTED');
    });
  });

  for (const zone of ZONES) {
    it(`under TZ=${zone}: a date of birth submitted reads back as sent in the subject details`, async function () {
      this.timeout(60_000);
      await inZone(zone, async () => {
        const applicant = await newApplicant();
        const applicationId = await newApplication(applicant);
        const submitted = await call('POST', `/v1/kyc/applications/${applicationId}/verification`, {
          headers: await applicantHeaders(applicant),
          json: {
            channel: 'server_upload',
            id_type: 'IDENTITY_CARD',
            id_number: '24681357',
            date_of_birth: '1990-05-17',
            selfie: JPEG_BASE64,
            document_front: JPEG_BASE64,
            document_back: JPEG_BASE64,
            consent: true,
          },
        });
        assert.equal(submitted.status, 202, submitted.text);
        assert.equal((await settledStatus(applicant, applicationId)).body.status, 'APPROVED');
        const details = await call('GET', `/v1/internal/kyc/subjects/${applicant.id}`, {
          headers: await applicantHeaders(DEMO.users.internal),
        });
        assert.equal(details.status, 200, details.text);
        assert.equal(details.body.subject.date_of_birth, '1990-05-17');
      });
    });

    it(`under TZ=${zone}: an installment's due date is the loan's start date plus whole weeks, and an invoice's dates are the document's`, async () => {
      await inZone(zone, async () => {
        const schedule = await call('GET', `/v1/accounts/${borrower.credit}/installments`, {
          headers: borrower.headers,
        });
        assert.equal(schedule.status, 200, schedule.text);
        assert.deepEqual(
          (schedule.body.data as { due_date: string }[]).map((i) => i.due_date),
          [1, 2, 3].map((week) => plusDays(startDate, 7 * week)),
        );
        const invoice = await readInvoice(invoiceId);
        assert.equal(invoice.status, 200, invoice.text);
        assert.equal(invoice.body.issued_date, '2026-11-01');
        assert.equal(invoice.body.due_date, '2026-12-01');
      });
    });
  }
});

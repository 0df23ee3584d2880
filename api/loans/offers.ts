import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { Knex } from 'knex';
import { accountStatuses, findActiveAccount } from '../../db/accounts/accounts';
import { availableCredit, openCreditLine } from '../../db/loans/credit-lines';
import {
  borrowerFacts,
  cancelOffer,
  createOffer,
  expireOffer,
  findLiveOffer,
  findLoanApplication,
  type LoanApplicationRow,
} from '../../db/loans/applications';
import { findProduct, offerTerms } from '../../db/loans/products';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { isUuid } from '../../domain/identifiers';
import { borrowingLimit, type PeriodUnit } from '../../domain/loans/terms';
import { LoanOfferError } from '../../workflows/loans/messages';
import type { Caller } from '../auth/caller';
import type { Needs } from '../deps';
import { idempotentExecutionId } from '../middleware/idempotency';
import { appliedView } from './views';
import type { LoanWorkflows } from './workflows';

/**
 * What the loan-application routes do (spec 4.3): make an offer to an eligible borrower (its
 * workflow started) and take it through that workflow's acceptOffer Update.
 */
export function loanOffers(deps: Needs<'db' | 'clock', 'IDEMPOTENCY_WAIT'>, workflows: LoanWorkflows) {
  return {
    offer: (
      ctx: Context,
      productCode: string,
      body: { user_id?: string; loan_amount?: number },
      organization?: string,
    ) => offer(deps, workflows, ctx, productCode, body, organization),
    apply: (ctx: Context, applicationId: string, taken: Taken) => apply(deps, workflows, ctx, applicationId, taken),
  };
}

type Taken = { loanAmount: number; tenure: number; tenureUnit?: PeriodUnit; collateralAmount: number };

/** A refusal in the plain shape: its description starts with the machine-readable reason. */
const refusal = (path: string, reason: string, subCode: string) =>
  new ServiceError(ErrorCode.BAD_REQUEST, `${subCode}: ${reason}`, [{ path, reason, sub_code: subCode }]);

/** The organization and borrower a request acts for, by the user_id rule of spec 4.3. */
export function borrowerOf(ctx: Context, userId: string | undefined, organization?: string) {
  const caller = ctx.state.caller as Caller;
  const organizationId = caller.organizationId;
  // Another organization's (or an unknown one's) products are not confirmed to exist; platform
  // keys act for no organization here.
  if (!organizationId || (organization !== undefined && organization !== organizationId))
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such organization');
  if (caller.scheme === 'user') {
    if (userId !== undefined)
      throw refusal(
        'body.user_id',
        'A user token borrows for its own user: user_id must not be sent',
        SubCode.NOT_ALLOWED,
      );
    return { organizationId, userId: caller.userId };
  }
  if (userId === undefined) throw refusal('body.user_id', 'user_id is required with this credential', SubCode.REQUIRED);
  return { organizationId, userId };
}

/** Whether the borrower's current account waits for its activation. */
const pendingActivation = async (db: Knex, borrower: { organizationId: string; userId: string }) =>
  (await accountStatuses(db, borrower.organizationId, borrower.userId)).current === 'PENDING_ACTIVATION';

/** Eligibility and terms: the live offer on the product, or a new one (its workflow started). */
async function offer(
  { db, clock }: Needs<'db' | 'clock'>,
  workflows: LoanWorkflows,
  ctx: Context,
  productCode: string,
  body: { user_id?: string; loan_amount?: number },
  organization?: string,
): Promise<LoanApplicationRow> {
  const borrower = borrowerOf(ctx, body.user_id, organization);
  const product = await findProduct(db, borrower.organizationId, productCode);
  if (!product) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such lending product');
  const facts = await borrowerFacts(db, borrower.organizationId, borrower.userId);
  if (facts.userStatus === 'WAITING_LIST') throw new ServiceError(ErrorCode.WAITING_LIST);
  // Unknown, or not an active user (disabled): not confirmed to exist.
  if (facts.userStatus !== 'ACTIVE') throw new ServiceError(ErrorCode.NOT_FOUND, 'No such user in the organization');
  const who = body.user_id === undefined ? 'user' : 'body.user_id';
  if (!facts.kycApproved)
    throw refusal(who, "The borrower's identity verification is not approved", 'KYC_NOT_APPROVED');
  if (facts.loansInArrears > 0) throw refusal(who, 'A loan of the borrower has an overdue installment', 'IN_ARREARS');
  const revolving = product.product_type === 'REVOLVING_CREDIT';
  // Term loans run one at a time; revolving draws run beside each other within the line's limit.
  if ((revolving ? facts.termLoansRunning : facts.loansRunning) > 0)
    throw refusal(who, 'A loan of the borrower is not repaid yet', 'LOAN_RUNNING');
  const [credit, current] = await Promise.all([
    findActiveAccount(db, borrower.organizationId, borrower.userId, 'CREDIT'),
    findActiveAccount(db, borrower.organizationId, borrower.userId, 'CURRENT'),
  ]);
  if (!credit || !current)
    throw (await pendingActivation(db, borrower))
      ? refusal(
          who,
          "The borrower's current account is not activated yet (POST /v1/user/accounts/current/activation): " +
            'it holds the collateral and receives the loan',
          'ACCOUNT_NOT_ACTIVATED',
        )
      : refusal(who, 'The borrower needs an active current and credit account', 'NO_ACCOUNT');
  const limit = revolving
    ? await availableCredit(
        db,
        borrower.organizationId,
        await openCreditLine(db, borrower.organizationId, {
          userId: borrower.userId,
          productId: product.id,
          accountId: credit.id,
          creditLimit: Number(product.credit_limit),
          currency: product.currency,
        }),
      )
    : borrowingLimit(
        {
          firstLoanLimit: Number(product.first_loan_limit),
          limitStep: Number(product.limit_step),
          maxAmount: Number(product.max_amount),
        },
        facts.loansRepaid,
      );
  const what = revolving ? 'available credit' : 'limit';
  if (limit < Number(product.min_amount))
    throw refusal(who, `The borrower's ${what} (${limit}) is below the product's minimum`, 'OVER_LIMIT');
  if (body.loan_amount !== undefined && body.loan_amount > limit)
    throw refusal('body.loan_amount', `Above the borrower's ${what} of ${limit}`, 'OVER_LIMIT');
  if (body.loan_amount !== undefined && body.loan_amount < Number(product.min_amount))
    throw refusal('body.loan_amount', `Below the product's minimum of ${product.min_amount}`, 'BELOW_MINIMUM');

  const now = clock.now();
  const live = await findLiveOffer(db, borrower.organizationId, borrower.userId, product.id);
  if (live && live.expires_at > now && (body.loan_amount ?? limit) === Number(live.loan_amount)) {
    // Asked again on the same terms: the live offer, while its run goes. A run its maker has not
    // started yet (a request at the same moment) is started here, so such requests share one offer.
    // Not started by this call: its maker started it meanwhile, or its run has gone.
    const goes =
      (await workflows.offerRunning(live.id)) ||
      (await startRun(workflows, live)) ||
      (await workflows.offerRunning(live.id));
    if (goes) return live;
  }
  // A live offer past its time (its timer not yet fired): expired; on other terms, or whose
  // workflow is gone (it could not be taken): withdrawn. Then a new one is made.
  if (live && live.expires_at <= now) await expireOffer(db, borrower.organizationId, live.id, now);
  else if (live) await cancelOffer(db, borrower.organizationId, live.id, now);
  const terms = offerTerms(product);
  const made = await createOffer(
    db,
    borrower.organizationId,
    {
      id: randomUUID(),
      resource_id: `lapp_${randomBytes(12).toString('base64url')}`,
      user_id: borrower.userId,
      product_id: product.id,
      product_code: product.code,
      account_id: credit.id,
      current_account_id: current.id,
      loan_amount: body.loan_amount ?? limit,
      tenure_duration: product.default_tenure,
      tenure_unit: product.tenure_unit,
      terms,
      currency: product.currency,
      expires_at: new Date(now.getTime() + Number(product.offer_ttl_ms)),
      day_ms: workflows.dayMs,
    },
    now,
  );
  if (!made)
    throw new ServiceError(
      ErrorCode.CONFLICT,
      "Other requests changed the borrower's offer at the same moment, again and again: ask again",
    );
  const { row: created, created: isNew } = made;
  // Another request's offer on the same terms, stored first, is answered as one asked for again
  // (200), its run started here too should that request not have started it yet; only the request
  // that made an offer withdraws it when its run cannot be started.
  if (isNew) ctx.status = 201;
  await startRun(workflows, created).catch(async (error: unknown) => {
    if (isNew) await cancelOffer(db, borrower.organizationId, created.id, clock.now());
    throw error;
  });
  return created;
}

/** Starts an offer's run: true when this call started it, false when it had one already (running or closed). */
const startRun = (workflows: LoanWorkflows, offer: LoanApplicationRow) =>
  workflows.startOffer({
    organizationId: offer.organization_id,
    applicationId: offer.id,
    loanAmount: Number(offer.loan_amount),
    terms: offer.terms,
    expiresAt: offer.expires_at.toISOString(),
    dayMs: offer.day_ms === null ? undefined : Number(offer.day_ms),
    accountId: offer.account_id,
    userId: offer.user_id,
  });

/** Takes an offer through its workflow's Update; answers the application as it is then (DISBURSED). */
async function apply(
  { db, config }: Needs<'db', 'IDEMPOTENCY_WAIT'>,
  workflows: LoanWorkflows,
  ctx: Context,
  applicationId: string,
  taken: Taken,
): Promise<void> {
  const caller = ctx.state.caller as Caller;
  const organizationId = caller.organizationId;
  const application =
    organizationId && isUuid(applicationId) ? await findLoanApplication(db, organizationId, applicationId) : undefined;
  // Another organization's or another borrower's application is not confirmed to exist.
  if (!application || (caller.scheme === 'user' && application.user_id !== caller.userId))
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such loan application');
  if (taken.tenureUnit !== undefined && taken.tenureUnit !== application.tenure_unit)
    throw refusal('body.tenure.unit', `The offer's tenures are in ${application.tenure_unit}`, SubCode.OUT_OF_RANGE);
  const updateId = idempotentExecutionId(ctx) ?? randomUUID();
  const ours = application.accepted_by === updateId;
  // The same keyed request again, after its first answer was lost: the loan it made.
  if (ours && application.status === 'DISBURSED') {
    ctx.status = 200;
    ctx.body = appliedView(application);
    return;
  }
  // Taken by this request's first execution but not disbursed: its Update died with a worker (or
  // still runs). The same Update again finishes it; every step finds what the first one did.
  // Acceptances that find another one being decided (OFFER_BUSY) wait for it and ask again, as an
  // identical keyed retry waits for its first execution: within IDEMPOTENCY_WAIT the answer is the
  // verdict (the loan, or the offer taken), not a 503 a client may take for "try another key".
  const waitUntil = Date.now() + config.IDEMPOTENCY_WAIT;
  let outcome: Awaited<ReturnType<LoanWorkflows['acceptOffer']>>;
  for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
    outcome =
      application.status === 'APPROVED' || (ours && application.status === 'ACCEPTED')
        ? await workflows.acceptOffer(
            application.id,
            { loanAmount: taken.loanAmount, tenure: taken.tenure, collateralAmount: taken.collateralAmount },
            updateId,
          )
        : {
            refused: application.status === 'EXPIRED' ? LoanOfferError.EXPIRED : LoanOfferError.TAKEN,
            message: `The offer is ${application.status}`,
          };
    if (!('refused' in outcome) || outcome.refused !== LoanOfferError.BUSY || Date.now() + pause > waitUntil) break;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
  if ('refused' in outcome && outcome.refused === LoanOfferError.BUSY)
    throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, outcome.message, [], { 'Retry-After': '1' });
  if ('refused' in outcome) {
    // This very request's acceptance committed (the offer is taken under its Update id) while its
    // Update was refused or lost with its run: not the execution's verdict, which is the loan. It is
    // waited for (IDEMPOTENCY_WAIT); past that, 503, which is never stored, so the same keyed
    // request again finishes it.
    const now = await disbursedBy(db, application, updateId, waitUntil);
    if (now?.accepted_by === updateId && now.status === 'DISBURSED') {
      ctx.status = 200;
      ctx.body = appliedView(now);
      return;
    }
    if (now?.accepted_by === updateId && now.status === 'ACCEPTED')
      throw new ServiceError(
        ErrorCode.SERVICE_UNAVAILABLE,
        'The offer is taken by this request and its loan is being paid out: send it again with the same Idempotency-Key',
        [],
        { 'Retry-After': '2' },
      );
    // A run that has ended answers "no longer open"; the offer's row says whether it was taken.
    if (outcome.refused === LoanOfferError.EXPIRED && (now?.status === 'ACCEPTED' || now?.status === 'DISBURSED'))
      outcome = { refused: LoanOfferError.TAKEN, message: 'The offer has been taken already' };
    const path = outcome.details?.path ?? 'path.application_id';
    const subCode = outcome.refused === LoanOfferError.INVALID_TERMS ? SubCode.OUT_OF_RANGE : outcome.refused;
    throw refusal(path, outcome.message, subCode);
  }
  const after = await findLoanApplication(db, application.organization_id, application.id);
  ctx.status = 200;
  ctx.body = appliedView(after!);
}

/**
 * The application once the acceptance under `updateId` has paid out its loan (DISBURSED), read
 * again until `waitUntil` while that acceptance is ACCEPTED; as it is otherwise.
 */
async function disbursedBy(db: Knex, application: LoanApplicationRow, updateId: string, waitUntil: number) {
  for (let pause = 100; ; pause = Math.min(pause * 2, 500)) {
    const now = await findLoanApplication(db, application.organization_id, application.id);
    if (now?.accepted_by !== updateId || now.status !== 'ACCEPTED' || Date.now() + pause > waitUntil) return now;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

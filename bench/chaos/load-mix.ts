import { below } from './random';
import type { LoadCustomer, Population } from './load-population';
import { ORG, PUSH_AMOUNT } from './load-population';

/** One request of the mix: what to send, as whom, and the statuses a correct service answers. */
export interface MixRequest {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  token: string;
  body?: unknown;
  expected: readonly number[];
  /** A push: whose it is and what it must end as (its number decides at the simulator). */
  push?: { customer: LoadCustomer; outcome: 'POSTED' | 'FAILED'; repayment: boolean };
}

/** A push the service accepted, to follow to its end. */
export interface AcceptedPush {
  id: string;
  outcome: 'POSTED' | 'FAILED';
  repayment: boolean;
}

/**
 * The mix, per 100 requests: what a lender's apps do most (read, poll) beside the writes that
 * keep the worker busy (a fifth of the requests start a push workflow that the simulator calls
 * back at once). Table order is print order.
 */
export const WEIGHTS = {
  'GET /v1/auth/whoami': 10,
  'GET /v1/transactions/{id}': 15,
  'GET /v1/agents': 5,
  'GET /v1/kyc/applications/{id}/status': 15,
  'POST /v1/accounts/loan/applications/{organization}': 10,
  'GET /v1/accounts/{accountId}/installments': 10,
  'GET …/installments/transactions': 10,
  'GET …/installments/{id}/transactions': 5,
  'POST …/stk-push (current account)': 13,
  'POST …/stk-push (credit account, a repayment)': 7,
} as const;
export type Route = keyof typeof WEIGHTS;
const ROUTES = Object.keys(WEIGHTS) as Route[];
const TOTAL = ROUTES.reduce((sum, route) => sum + WEIGHTS[route], 0);

/** How many recent pushes transaction reads choose from (clients poll what they just started). */
const RECENT = 200;

/**
 * Draws requests of the mix from seeded randomness, and remembers every push accepted (for
 * transaction reads and for the completion check at the end).
 */
export class LoadMix {
  readonly accepted: AcceptedPush[] = [];
  private readonly recent: { id: string; token: string }[] = [];

  constructor(
    private readonly population: Population,
    private readonly next: () => number,
  ) {
    for (const b of population.borrowers) {
      const id = population.prepared.get(b.id)!;
      this.accepted.push({ id, outcome: 'POSTED', repayment: true });
      this.remember({ id, token: b.token });
    }
  }

  draw(): MixRequest {
    let ticket = below(this.next, TOTAL);
    const route = ROUTES.find((r) => (ticket -= WEIGHTS[r]) < 0)!;
    return this.request(route);
  }

  /** Notes a push the service accepted (its 201 body). */
  pushed(request: MixRequest, body: string): void {
    if (!request.push) return;
    const id = (JSON.parse(body) as { id: string }).id;
    this.accepted.push({ id, outcome: request.push.outcome, repayment: request.push.repayment });
    this.remember({ id, token: request.push.customer.token });
  }

  private remember(push: { id: string; token: string }) {
    this.recent.push(push);
    if (this.recent.length > RECENT) this.recent.shift();
  }

  private pick<T>(items: readonly T[]): T {
    return items[below(this.next, items.length)]!;
  }

  private request(route: Route): MixRequest {
    const { borrowers, prospects, staff } = this.population;
    const get = (path: string, token: string): MixRequest => ({ route, method: 'GET', path, token, expected: [200] });
    const anyone = () => this.pick([...borrowers, ...prospects]);
    switch (route) {
      case 'GET /v1/auth/whoami':
        return get('/v1/auth/whoami', anyone().token);
      case 'GET /v1/transactions/{id}': {
        const push = this.pick(this.recent);
        return get(`/v1/transactions/${push.id}`, push.token);
      }
      case 'GET /v1/agents':
        return get('/v1/agents?size=20', this.pick(staff));
      case 'GET /v1/kyc/applications/{id}/status': {
        const c = anyone();
        return get(`/v1/kyc/applications/${c.kycApplication}/status`, c.token);
      }
      case 'POST /v1/accounts/loan/applications/{organization}':
        // The first ask makes an offer (201); later ones answer the same open offer (200).
        return {
          ...get(`/v1/accounts/loan/applications/${ORG}`, this.pick(prospects).token),
          method: 'POST',
          body: {},
          expected: [200, 201],
        };
      case 'GET /v1/accounts/{accountId}/installments': {
        const b = this.pick(borrowers);
        return get(`/v1/accounts/${b.credit}/installments`, b.token);
      }
      case 'GET …/installments/transactions': {
        const b = this.pick(borrowers);
        return get(`/v1/accounts/${b.credit}/installments/transactions?size=20`, b.token);
      }
      case 'GET …/installments/{id}/transactions': {
        const b = this.pick(borrowers);
        return get(`/v1/accounts/${b.credit}/installments/${b.installment}/transactions?size=20`, b.token);
      }
      case 'POST …/stk-push (current account)': {
        const c = anyone();
        return this.push(route, c, c.current, c.phone, c.pushOutcome, false);
      }
      case 'POST …/stk-push (credit account, a repayment)': {
        const b = this.pick(borrowers);
        return this.push(route, b, b.credit, b.payer, 'POSTED', true);
      }
    }
  }

  private push(
    route: Route,
    customer: LoadCustomer,
    account: string,
    phone: string,
    outcome: 'POSTED' | 'FAILED',
    repayment: boolean,
  ): MixRequest {
    return {
      route,
      method: 'POST',
      path: '/v1/transactions/mobilemoney/stk-push',
      token: customer.token,
      body: { account_id: account, amount: { value: PUSH_AMOUNT, currency: 'KES' }, mobile_number: phone },
      expected: [201],
      push: { customer, outcome, repayment },
    };
  }
}

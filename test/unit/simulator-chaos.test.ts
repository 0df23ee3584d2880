import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEV_CURRENT_ACCOUNT, DEV_MOBILE_MONEY } from '../../dev/simulators';
import { startKycSimulator } from '../../simulators/kyc';
import { signV2 } from '../../providers/kyc/signature';
import { createMobileMoneyClient } from '../../providers/mobile-money/client';
import { startMobileMoneySimulator } from '../../simulators/mobile-money';
import { createSmsClient } from '../../providers/sms/client';
import { startSmsSimulator } from '../../simulators/sms';
import {
  type ChaosCallback,
  type ChaosRecord,
  callbackChaos,
  ChaosSettings,
  withWrongToken,
} from '../../simulators/chaos';
import { SimulatorTimers } from '../../simulators/server';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A request to a simulator, with a JSON body if given. */
const jsonFetch = (url: string, method = 'GET', body?: unknown) =>
  fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** A receiver of callbacks: what came (path, raw body), answering 200. */
async function startReceiver() {
  const received: { path: string; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A callback whose copies and forgeries are counted, in the order they are sent. */
function counted(sent: string[], request: string): ChaosCallback {
  return {
    kind: 'test',
    request,
    send: async () => {
      sent.push(request);
      return 200;
    },
    forgeries: {
      one: async () => (sent.push(`${request}:one`), 404),
      two: async () => (sent.push(`${request}:two`), 401),
    },
  };
}

async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5_000,
): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(20)) {
    const value = await check();
    if (value) return value;
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

describe('unit: simulator callback chaos (issue 19, item 2): each callback delivered as its seeded plan says', () => {
  const plans = (records: ChaosRecord[]) => records.map(({ copies, timing, forgery }) => ({ copies, timing, forgery }));

  async function deliverMany(seed: number, count: number, overrides: Partial<ChaosSettings> = {}) {
    const timers = new SimulatorTimers();
    const chaos = callbackChaos(timers);
    chaos.configure(ChaosSettings.parse({ seed, windowMs: 20, lateMaxMs: 50, ...overrides }));
    const sent: string[] = [];
    for (let i = 0; i < count; i++) await chaos.deliver(counted(sent, `r${i}`));
    return { chaos, sent, timers };
  }

  it('the same seed plans the n-th callback the same way; another seed does not', async () => {
    const a = await deliverMany(7, 60);
    const b = await deliverMany(7, 60);
    const c = await deliverMany(8, 60);
    assert.deepEqual(plans(a.chaos.records()), plans(b.chaos.records()));
    assert.notDeepEqual(plans(a.chaos.records()), plans(c.chaos.records()));
    for (const run of [a, b, c]) run.timers.clear();
  });

  it('every copy planned is sent, late and shuffled ones included, each forgery once and first; 0 to 3 copies all occur', async () => {
    const { chaos, sent } = await deliverMany(11, 200, { forged: 0.5 });
    const records = chaos.records();
    await until('every held copy sent', () =>
      records.every((r) => sent.filter((s) => s === r.request).length === r.copies),
    );
    await sleep(100);
    for (const r of chaos.records()) {
      assert.equal(sent.filter((s) => s === r.request).length, r.copies, `${r.request}: its copies`);
      assert.equal(r.answers.length, r.copies);
      const forged = sent.filter((s) => s.startsWith(`${r.request}:`));
      assert.deepEqual(forged, r.forgery ? [`${r.request}:${r.forgery}`] : []);
      if (r.forgery) assert.equal(r.forgedAnswer, r.forgery === 'one' ? 404 : 401);
      if (r.forgery && r.timing === 'prompt' && r.copies > 0)
        assert.ok(sent.indexOf(`${r.request}:${r.forgery}`) < sent.indexOf(r.request), 'the forgery goes first');
    }
    for (const n of [0, 1, 2, 3])
      assert.ok(
        records.some((r) => r.copies === n),
        `${n} copies planned`,
      );
    for (const t of ['prompt', 'shuffled', 'late'] as const)
      assert.ok(
        records.some((r) => r.timing === t),
        t,
      );
    assert.ok(records.some((r) => r.forgery) && records.some((r) => !r.forgery));
  });

  it('a late callback waits for a status query about its request; without one, lateMaxMs', async () => {
    const timers = new SimulatorTimers();
    const chaos = callbackChaos(timers);
    chaos.configure(ChaosSettings.parse({ seed: 1, copies: [0, 1, 0, 0], late: 1, shuffled: 0, lateMaxMs: 300 }));
    const sent: string[] = [];
    await chaos.deliver(counted(sent, 'queried'));
    await chaos.deliver(counted(sent, 'never-queried'));
    await sleep(50);
    assert.deepEqual(
      sent.filter((s) => !s.includes(':')),
      [],
      'both held',
    );
    chaos.queried('queried');
    await until('released by the query', () => sent.includes('queried'));
    assert.ok(!sent.includes('never-queried'));
    await until('released after lateMaxMs', () => sent.includes('never-queried'));
    assert.deepEqual(
      chaos.records().map((r) => [r.request, r.released]),
      [
        ['queried', 'after_query'],
        ['never-queried', 'no_query'],
      ],
    );
  });

  it('shuffled callbacks are held for the window and released together, in a seeded order', async () => {
    const timers = new SimulatorTimers();
    const chaos = callbackChaos(timers);
    chaos.configure(ChaosSettings.parse({ seed: 5, copies: [0, 1, 0, 0], shuffled: 1, late: 0, windowMs: 150 }));
    const sent: string[] = [];
    const requests = Array.from({ length: 12 }, (_, i) => `s${i}`);
    for (const request of requests) await chaos.deliver(counted(sent, request));
    assert.deepEqual(
      sent.filter((s) => !s.includes(':')),
      [],
      'held for the window',
    );
    await until('released', () => sent.filter((s) => !s.includes(':')).length === 12);
    const order = sent.filter((s) => !s.includes(':'));
    assert.deepEqual([...order].sort(), [...requests].sort());
    assert.notDeepEqual(order, requests, 'not in the order they were due');
  });

  it('settings are checked: a seed is required, weights and chances in range', () => {
    assert.equal(ChaosSettings.safeParse({}).success, false);
    assert.equal(ChaosSettings.safeParse({ seed: 1, late: 0.8, shuffled: 0.5 }).success, false);
    assert.equal(ChaosSettings.safeParse({ seed: 1, copies: [0, 0, 0, 0] }).success, false);
    assert.deepEqual(ChaosSettings.parse({ seed: 1 }).copies, [1, 4, 2, 1]);
  });

  it('a wrong token replaces the last long path segment (the token our callback URLs carry), nothing else', () => {
    const token = 'a'.repeat(32);
    const id = randomUUID();
    for (const [url, index] of [
      [`http://127.0.0.1:1/v1/callbacks/stk/${id}/${token}`, 5],
      [`http://127.0.0.1:1/v1/callbacks/b2c/${id}/${token}/result`, 5],
    ] as const) {
      const forged = new URL(withWrongToken(url)).pathname.split('/');
      const genuine = new URL(url).pathname.split('/');
      assert.notEqual(forged[index], genuine[index]);
      assert.equal(forged[index]!.length, token.length);
      const others = (segments: string[]) => segments.filter((_, i) => i !== index);
      assert.deepEqual(others(forged), others(genuine));
    }
  });
});

describe('unit: simulator callback chaos through the simulators’ control APIs', () => {
  it('mobile money: PATCH /_control/mode sets it; a late push result waits for the status query; GET /_control/chaos tells what was done', async () => {
    const receiver = await startReceiver();
    const sim = await startMobileMoneySimulator({ ...DEV_MOBILE_MONEY, callbackDelayMs: 0 });
    try {
      const control = (path: string, method?: string, body?: unknown) =>
        jsonFetch(`${sim.url}/_control${path}`, method, body);
      assert.equal((await control('/mode', 'PATCH', { chaos: { seed: 1, late: 2 } })).status, 400);
      const chaos = { seed: 3, copies: [0, 0, 1, 0], late: 1, shuffled: 0, forged: 1, lateMaxMs: 60_000 };
      const mode = (await (await control('/mode', 'PATCH', { chaos })).json()) as { chaos: ChaosSettings };
      assert.equal(mode.chaos.seed, 3);
      const client = createMobileMoneyClient({
        ...DEV_MOBILE_MONEY,
        baseUrl: sim.url,
        certificate: sim.certificate,
      });
      const token = 'b'.repeat(32);
      const push = await client.stkPush({
        amount: 100,
        phone: '+254712345670',
        callbackUrl: `${receiver.url}/stk/${randomUUID()}/${token}`,
        accountReference: 'chaos',
        description: 'chaos',
        transactionType: 'CustomerPayBillOnline',
      });
      const [record] = await until('the forgery sent', () => {
        const records = sim.control.chaos();
        return records[0]?.forgedAnswer !== undefined && records;
      });
      assert.equal(record!.request, push.checkoutRequestId);
      assert.equal(record!.timing, 'late');
      // The provider's own callbacks (forgeries are recorded apart), answered by the receiver.
      const genuine = () => sim.control.callbacks().filter((c) => !c.forgery && c.status === 200);
      await sleep(100);
      assert.equal(genuine().length, 0, 'held until the query');
      assert.deepEqual(await client.stkQuery(push.checkoutRequestId), {
        state: 'final',
        resultCode: '0',
        resultDesc: 'The service request is processed successfully.',
      });
      await until('both copies released after the query', () => genuine().length === 2);
      const [done] = (await (await control('/chaos')).json()) as ChaosRecord[];
      assert.equal(done!.released, 'after_query');
      assert.deepEqual(done!.answers, [200, 200]);
      const forged = sim.control.callbacks().filter((c) => c.forgery);
      assert.deepEqual(
        forged.map((c) => c.forgery),
        [record!.forgery],
      );
      assert.equal(sim.control.pushes()[0]!.callbacksSent, 2, 'a forgery is not the provider’s callback');
      await control('/reset', 'POST');
      assert.deepEqual(sim.control.chaos(), []);
    } finally {
      await sim.close();
      receiver.close();
    }
  });

  it('KYC: PATCH /_control sets it; a late v2 result waits for the signed job_status lookup of its job; forgeries beside it', async () => {
    const receiver = await startReceiver();
    const partner = { partnerId: '2101', apiKey: 'chaos-unit-key' };
    const sim = await startKycSimulator({ ...partner, processingMs: 10, callbackDelayMs: 0 });
    try {
      const call = (path: string, method: string, body?: unknown) => jsonFetch(`${sim.url}${path}`, method, body);
      const signed = (fields: Record<string, unknown>) => {
        const timestamp = new Date().toISOString();
        return {
          ...fields,
          partner_id: partner.partnerId,
          timestamp,
          signature: signV2(partner.apiKey, partner.partnerId, timestamp),
        };
      };
      const chaos = { seed: 4, copies: [0, 1, 0, 0], late: 1, shuffled: 0, forged: 1, lateMaxMs: 60_000 };
      assert.equal((await call('/_control', 'PATCH', { chaos: { seed: 'x' } })).status, 400);
      assert.equal((await call('/_control', 'PATCH', { chaos })).status, 200);
      const job = { user_id: randomUUID(), job_id: randomUUID() };
      const minted = await call(
        '/v1/token',
        'POST',
        signed({ ...job, product: 'doc_verification', callback_url: `${receiver.url}/kyc` }),
      );
      const { token } = (await minted.json()) as { token: string };
      // The client SDK submits; ID number ending in 1: no match.
      assert.equal((await call('/_control/sdk/submit', 'POST', { token, id_number: '12345671' })).status, 200);
      const [record] = await until('planned, its forgery sent', async () => {
        const records = (await (await call('/_control/chaos', 'GET')).json()) as ChaosRecord[];
        return records[0]?.forgedAnswer !== undefined && records;
      });
      assert.deepEqual([record!.kind, record!.request, record!.timing], ['kyc_v2_final', job.job_id, 'late']);
      const genuine = () =>
        receiver.received
          .map((r) => JSON.parse(r.body) as Record<string, unknown>)
          .filter((b) => (b.PartnerParams as { job_id?: string })?.job_id === job.job_id && b.ResultCode === '1022');
      await sleep(100);
      const forgedAlready = genuine().length;
      const status = await call('/v1/job_status', 'POST', signed(job));
      assert.equal(((await status.json()) as { job_complete: boolean }).job_complete, true);
      await until('released after the lookup', () => genuine().length > forgedAlready);
      const [done] = (await (await call('/_control/chaos', 'GET')).json()) as ChaosRecord[];
      assert.equal(done!.released, 'after_query');
      assert.deepEqual(done!.answers, [200]);
    } finally {
      await sim.close();
      receiver.close();
    }
  });

  it('SMS: interim and final delivery reports, each its own plan, at GET /_control/chaos', async () => {
    const receiver = await startReceiver();
    const { sms } = DEV_CURRENT_ACCOUNT;
    const sim = await startSmsSimulator({ ...sms, senderIds: [sms.senderId] });
    try {
      const control = (path: string, method?: string, body?: unknown) =>
        jsonFetch(`${sim.url}/_control${path}`, method, body);
      const reportUrl = `${receiver.url}/delivery-reports/${'c'.repeat(40)}`;
      const patched = await control('/mode', 'PATCH', {
        deliveryReportUrl: reportUrl,
        deliveryDelayMs: 0,
        interimReports: true,
        chaos: { seed: 9, copies: [0, 1, 0, 0], late: 0, shuffled: 0, forged: 1 },
      });
      assert.equal(patched.status, 200);
      const client = createSmsClient({ baseUrl: sim.url, username: sms.username, apiKey: sms.apiKey });
      const sent = await client.send({ to: '+254712345678', message: 'chaos' });
      const records = await until('both reports planned and sent', async () => {
        const got = (await (await control('/chaos')).json()) as ChaosRecord[];
        return got.length === 2 && got.every((r) => r.answers.length === 1) && got;
      });
      assert.deepEqual(
        records.map((r) => [r.kind, r.request]),
        [
          ['sms_interim', sent.messageId],
          ['sms_final', sent.messageId],
        ],
      );
      const statuses = receiver.received
        .filter((r) => r.path === new URL(reportUrl).pathname)
        .map((r) => new URLSearchParams(r.body))
        .filter((form) => form.get('id') === sent.messageId)
        .map((form) => form.get('status'));
      assert.deepEqual(statuses, ['Submitted', 'Success'], 'the genuine reports, in order');
    } finally {
      await sim.close();
      receiver.close();
    }
  });
});

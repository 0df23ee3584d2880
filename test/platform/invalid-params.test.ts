import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { merchant, presignPath } from '../support/financing';
import { call, rawCall, type Reply } from '../support/http';
import { applicantHeaders, JPEG_BASE64, newApplicant, newApplication } from '../support/kyc';
import { bearer, financingToken } from '../support/tokens';

/**
 * /openapi.json (InvalidParam.path) and the README's Errors: `invalid_params[].path` is the part
 * (path, query, header, body), then the field's JSON path, dot-separated, a name that cannot be
 * echoed as it is JSON-quoted; the part alone only when the part as a whole is at fault.
 */
const SEGMENT = String.raw`(?:[^."\\\s]+|"(?:[^"\\]|\\.)*"…?)`;
const CONVENTION = new RegExp(String.raw`^(?:path|query|header|body)(?:\.${SEGMENT})+$`);
/** What the part alone may name: a body missing, not UTF-8, not JSON, or nested too deep. */
const WHOLE_BODY = new Set(['REQUIRED', 'MALFORMED_JSON', 'TOO_DEEP', 'INVALID_CHARACTERS']);

type Param = { path: string; reason: string; sub_code: string };
const paramsOf = (reply: Reply): Param[] => {
  assert.equal(reply.status, 400, reply.text);
  assert.equal(reply.body.code, 'INVALID_PARAMS', reply.text);
  return reply.body.invalid_params as Param[];
};

describe('one convention for invalid_params[].path: every kind of refusal names its field as the document says', () => {
  it('validation, the edge guard and the handlers’ own refusals, for path, query, header and body, each path as documented and exactly the expected one', async function () {
    this.timeout(60_000);
    const applicant = await newApplicant();
    const headers = await applicantHeaders(applicant);
    const id = await newApplication(applicant);
    const verification = `/v1/kyc/applications/${id}/verification`;
    const upload = (extra: Record<string, unknown> = {}) => ({
      channel: 'server_upload',
      id_type: 'IDENTITY_CARD',
      selfie: JPEG_BASE64,
      document_front: JPEG_BASE64,
      consent: true,
      ...extra,
    });
    const noName = await newApplicant({ name: null });
    const noNameId = await newApplication(noName);
    const internal = await applicantHeaders(DEMO.users.internal);
    const financing = bearer(
      await financingToken('financing', merchant.financingSubject, {
        organization_id: merchant.organization_id,
        permissions: ['financing.write:ORG'],
      }),
    );

    // [the refusal, the paths expected]
    const cases: [string, () => Promise<Reply>, string[]][] = [
      [
        'a body field of the wrong type',
        () => call('POST', verification, { headers, json: upload({ id_type: 5 }) }),
        ['body.id_type'],
      ],
      [
        'a required body field missing',
        () => call('POST', verification, { headers, json: upload({ selfie: undefined }) }),
        ['body.selfie'],
      ],
      [
        'an unknown body field with a dot in its name',
        () => call('POST', verification, { headers, json: upload({ 'a.b': 1 }) }),
        ['body."a.b"'],
      ],
      [
        'an array item',
        () => call('POST', verification, { headers, json: upload({ liveness_images: [JPEG_BASE64, 'x'] }) }),
        ['body.liveness_images.1'],
      ],
      [
        'a handler refusal of a body field (consent)',
        () => call('POST', verification, { headers, json: upload({ consent: false }) }),
        ['body.consent'],
      ],
      [
        'a handler refusal of a name not on file (v3)',
        async () =>
          call('POST', `/v1/kyc/applications/${noNameId}/verification`, {
            headers: { ...(await applicantHeaders(noName)), 'X-Provider-Api-Versions': 'v3' },
            json: upload({ liveness_images: Array(6).fill(JPEG_BASE64) }),
          }),
        ['body.name'],
      ],
      [
        'a path parameter that is no uuid',
        () => call('GET', '/v1/kyc/applications/not-a-uuid/status', { headers }),
        ['path.id'],
      ],
      [
        'a NUL in a path parameter',
        () => rawCall('GET', '/v1/kyc/applications/a%00b/status', undefined, headers),
        ['path.id'],
      ],
      [
        'a path parameter that is not UTF-8',
        () => rawCall('GET', '/v1/kyc/applications/%ff/status', undefined, headers),
        ['path.id'],
      ],
      [
        'an over-long path parameter',
        () => rawCall('GET', `/v1/kyc/applications/${'a'.repeat(1_100)}/status`, undefined, headers),
        ['path.id'],
      ],
      [
        'a query value that is no uuid',
        () => call('GET', '/v1/internal/kyc/status?user_id=x', { headers: internal }),
        ['query.user_id'],
      ],
      [
        'an unknown query name',
        () => call('GET', `/v1/internal/kyc/status?user_id=${applicant.id}&foo=1`, { headers: internal }),
        ['query.foo'],
      ],
      [
        'a NUL in a query name',
        () => rawCall('GET', `/v1/internal/kyc/status?user_id=${applicant.id}&a%00=1`, undefined, internal),
        ['query."a\\u0000"'],
      ],
      [
        'a NUL in a query value',
        () => rawCall('GET', `/v1/internal/kyc/status?user_id=a%00`, undefined, internal),
        ['query.user_id'],
      ],
      [
        'a header the handler refuses',
        async () => {
          await call('GET', verification, { headers: { ...headers, 'X-Provider-Api-Versions': 'v2' } });
          return call('POST', verification, {
            headers: { ...headers, 'X-Provider-Api-Versions': 'v3' },
            json: upload(),
          });
        },
        ['header.x-provider-api-versions'],
      ],
      [
        'a NUL in a nested string',
        () => rawCall('POST', verification, '{"channel":"provider_sdk","x":["ok","a\\u0000"]}', headers),
        ['body.x.1'],
      ],
      [
        'a NUL in a key',
        () => rawCall('POST', verification, '{"channel":"provider_sdk","a\\u0000":1}', headers),
        ['body."a\\u0000"'],
      ],
      [
        'a reserved key',
        () => rawCall('POST', verification, '{"channel":"provider_sdk","x":{"__proto__":1}}', headers),
        ['body.x.__proto__'],
      ],
      ['a body that is not JSON', () => rawCall('POST', verification, '{"channel":', headers), ['body']],
      [
        'a body nested too deep',
        () => rawCall('POST', verification, `${'['.repeat(40)}${']'.repeat(40)}`, headers),
        ['body'],
      ],
      [
        'a body that is not UTF-8',
        () => rawCall('POST', verification, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), headers),
        ['body'],
      ],
      [
        'a financing body field',
        () =>
          call('POST', presignPath(), {
            headers: financing,
            json: { document_type: 'RECEIPT', content_type: 'image/jpeg', size_bytes: 10 },
          }),
        ['body.document_type'],
      ],
      [
        'a financing path parameter past its length',
        () =>
          call('POST', presignPath('m'.repeat(256)), {
            headers: financing,
            json: { document_type: 'INVOICE', content_type: 'image/jpeg', size_bytes: 10 },
          }),
        ['path.merchantId'],
      ],
    ];
    for (const [kind, send, expected] of cases) {
      const params = paramsOf(await send());
      assert.deepEqual(
        params.map((p) => p.path),
        expected,
        `${kind}: ${JSON.stringify(params)}`,
      );
      for (const param of params) {
        const whole = param.path === 'body' && WHOLE_BODY.has(param.sub_code);
        assert.ok(whole || CONVENTION.test(param.path), `${kind}: ${param.path} is not the documented convention`);
      }
    }
  });
});

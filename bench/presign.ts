import { compare, withServer } from './lib';

/**
 * Presigning an upload (financing JWT, the merchant-scoped permission read from Postgres, the
 * presign itself: local crypto, and one insert) against the authenticated whoami route in the
 * same run. Goal: at least 0.7.
 */
export async function presignBench(): Promise<number> {
  return withServer<Record<string, string>, number>('auth.ts', (info) =>
    compare({
      title: 'POST /v1/financing/merchants/{merchantId}/uploads/presign vs authenticated GET /v1/auth/whoami',
      baseline: {
        name: 'whoami (JWT, caller, rate limits)',
        url: info.service!,
        headers: { Authorization: `Bearer ${info.token}` },
      },
      candidate: {
        name: 'presign (JWT, merchant access, sign, insert)',
        url: info.presign!,
        headers: { Authorization: `Bearer ${info.financingToken}` },
        json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: 250_000 },
      },
      goal: 0.7,
    }),
  );
}

if (require.main === module) void presignBench();

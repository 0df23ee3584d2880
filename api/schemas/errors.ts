import { z } from 'zod';

/** The two error bodies of spec section 7, as documented in the OpenAPI document. */
export const PlainError = z
  .object({
    code: z.string().meta({ example: 'BAD_REQUEST' }),
    description: z.string().meta({ example: 'Bad Request' }),
  })
  .meta({
    id: 'Error',
    description: 'Error body of the loan, transaction, installment, agent, account and token endpoints.',
  });

export const InvalidParam = z
  .object({
    path: z.string().meta({
      example: 'path.id',
      description:
        'The offending field: path., query., header. or body. and its JSON path (dot-separated, array items by index; ' +
        'a name that cannot be echoed as it is JSON-quoted, e.g. body."a.b"). The part alone (body) when the part as ' +
        'a whole is at fault: missing, not UTF-8, not JSON, nested too deep.',
    }),
    reason: z.string().meta({ example: 'Invalid UUID' }),
    sub_code: z.string().meta({ example: 'INVALID_UUID' }),
  })
  .meta({ id: 'InvalidParam' });

export const ValidationError = z
  .object({
    code: z.string().meta({ example: 'INVALID_PARAMS' }),
    description: z.string().meta({ example: 'Invalid parameters' }),
    identifier: z.string().meta({ description: 'The request id (also in the X-Request-Id header), for support.' }),
    invalid_params: z.array(InvalidParam).meta({ description: 'Empty when no single field is at fault.' }),
  })
  .meta({
    id: 'ValidationError',
    description: 'Error body of the KYC, financing and internal endpoints, for every error.',
  });

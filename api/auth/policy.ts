import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { allows } from '../../domain/rbac';
import type { Caller } from './caller';

/**
 * The organization a request acts for. Only a platform API key holding a PLATFORM-scoped grant
 * may name one (`organization_id`); every other caller acts for the organization of its
 * credentials, and naming one is refused with 403 FORBIDDEN (documented choice: the request is
 * well-formed, the caller is not allowed to make it).
 */
export function actingOrganization(
  caller: Caller,
  requested: string | undefined,
  field = 'query.organization_id',
): string {
  if (requested !== undefined) {
    const platform =
      caller.scheme === 'api_key' && caller.platform && caller.grants.some((g) => g.scope === 'PLATFORM');
    if (!platform) {
      throw new ServiceError(ErrorCode.FORBIDDEN, 'organization_id may be passed only with a platform API key', [
        { path: field, reason: 'only a platform API key may choose the organization', sub_code: SubCode.NOT_ALLOWED },
      ]);
    }
    return requested;
  }
  if (caller.organizationId === null) {
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'A platform API key must name the organization', [
      { path: field, reason: 'required with a platform API key', sub_code: SubCode.REQUIRED },
    ]);
  }
  return caller.organizationId;
}

/** Refuses with 403 unless the caller holds `permission` for `organizationId` (RBAC, spec 5.7). */
export function requirePermission(caller: Caller, permission: string, organizationId: string): void {
  if (!allows(caller.grants, permission, caller.organizationId, organizationId)) {
    throw new ServiceError(ErrorCode.FORBIDDEN, `Missing permission ${permission} for this organization`);
  }
}

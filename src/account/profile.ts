import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { Unauthorized } from '../lib/errors';
import { checkBrowserUrl } from '../outbound';
import { changed } from '../audit';
import { toUser } from '../users/mappers';
import * as users from '../users/service';
import { recordAccountChange } from './audit';
import { userIdOf } from '../access/roles';
import { plainName } from '../lib/names';

/** PATCH /v1/me: the caller's name and picture; audited in each of their organizations when something changed. */
export async function updateProfile(deps: AppDeps, principal: Principal, body: { name?: string; image?: string | null }) {
  if (typeof body.image === 'string') checkBrowserUrl(deps.outbound.policy, body.image, ['body', 'image']);
  return deps.db.transaction().execute(async (trx) => {
    const before = await users.findUser(trx, userIdOf(principal));
    if (!before) throw new Unauthorized();
    // The name as it will be stored (src/lib/names.ts), so the audit entry says what changed.
    const name = body.name === undefined ? undefined : plainName(body.name) || null;
    const changes = changed({ name: before.name, image: before.image }, { name, image: body.image });
    // Nothing differs: nothing is written (and so nothing is audited).
    if (Object.keys(changes).length === 0) return toUser(before);
    const after = await users.updateProfile(trx, userIdOf(principal), body, deps.clock.now());
    if (!after) throw new Unauthorized();
    await recordAccountChange(trx, deps.audit, userIdOf(principal), 'member.profile_updated', changes);
    return toUser(after);
  });
}

/**
 * Account validation endpoints (1.22, only with `account_validation`):
 * - `POST /accounts/<id>/validate/<key>`: marks the account validated, answers the bare account
 *   (not wrapped in `data`, as Kinto does) and mails a confirmation; a wrong key or an unknown
 *   id both give 403 "Account ID and activation key do not match" (nothing learnt).
 * - `POST /accounts/<id>/reset-password`: mails a temporary password; answers the same 200 for
 *   unknown ids. The mail leaves in the background so that timing does not reveal either.
 *   Deliberate difference: the id pattern is checked before the lookup (Kinto checks it only
 *   for existing accounts, which answers 400 vs 200 and so tells whether an id exists).
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import type { Services } from '../request-context.js';
import { isPlainObject } from '../engine/body.js';
import { FOR_UPDATE } from '../engine/objects.js';
import { publicAccount } from './resource.js';
import { ACCOUNT_SCOPE } from './ids.js';
import type { AccountMails } from './mails.js';
import type { AccountPolicy } from './policy.js';
import type { StoredObject } from '../storage/types.js';
import { consumeActivationKey, createTemporaryPassword } from './tokens.js';

const RESET_MESSAGE = 'A temporary reset password has been sent by mail';

function keyMismatch(): ApiError {
  // Kinto builds this error without an errno: 999.
  return new ApiError(403, ERRNO.UNDEFINED, { message: 'Account ID and activation key do not match' });
}

export function createValidationHandlers(
  services: Services,
  policy: AccountPolicy,
  mails: AccountMails,
  log: FastifyBaseLogger,
) {
  const { settings } = services;
  const emailPattern = new RegExp(settings.account_validation_email_regexp);

  /** Mails whose failure must not fail the request: logged without their contents. */
  function sendLater(what: string, sending: Promise<void>): void {
    sending.catch((error: unknown) => log.error({ error: (error as Error).message }, `account ${what} mail not sent`));
  }

  return {
    async validate(request: FastifyRequest) {
      const { account_id: id, key } = request.params as { account_id: string; key: string };
      const account = await request.work.run('write', async (session) => {
        const existing = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        if (!existing || !(await consumeActivationKey(session.nonces, id, key))) throw keyMismatch();
        const { id: _id, last_modified: _lastModified, ...data } = existing;
        const updated = await session.objects.update(ACCOUNT_SCOPE, id, { ...data, validated: true });
        request.work.emit(request, {
          resourceName: 'account',
          parentId: ACCOUNT_SCOPE.parentId,
          action: 'update',
          timestamp: updated.last_modified,
          impactedObjects: [
            { new: publicAccount(updated) as StoredObject, old: publicAccount(existing) as StoredObject },
          ],
        });
        return updated;
      });
      policy.credentials.forget(id);
      sendLater('confirmation', mails.sendConfirmation(publicAccount(account)));
      return publicAccount(account);
    },

    async resetPassword(request: FastifyRequest) {
      const { account_id: id } = request.params as { account_id: string };
      const body = request.body;
      if (body !== undefined && body !== null && !isPlainObject(body))
        throw invalidParameter('body', '', 'Should be a JSON object');
      const data = isPlainObject(body) ? body.data : undefined;
      const emailContext = isPlainObject(data) ? data['email-context'] : undefined;
      if (!emailPattern.test(id)) {
        throw invalidParameter(
          'body',
          'data.id',
          `The user id should match ${settings.account_validation_email_regexp}.`,
        );
      }
      const issued = await request.work.run('write', async (session) => {
        const account = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        if (!account) return null;
        return {
          account,
          password: await createTemporaryPassword(session.nonces, settings, id, account.last_modified),
        };
      });
      if (issued)
        sendLater(
          'reset-password',
          mails.sendTemporaryPassword(publicAccount(issued.account), issued.password, emailContext),
        );
      return { message: RESET_MESSAGE };
    },
  };
}

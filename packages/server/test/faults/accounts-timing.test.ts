/**
 * Issue 19 item 6: the time a login takes must not tell which accounts exist. A wrong password
 * for an existing account costs one argon2 verification; a name that is no account must cost
 * the same (a dummy hash), also when the account's right password is in the verified-password
 * cache. And the answers must be the same: with `account` the only Basic policy, both are
 * anonymous, as in the original (issue 36 item 9; both were 401 before).
 *
 * Speed is measured, not asserted tightly: on a shared 2-core machine single samples are noise.
 * Medians of interleaved samples (so that load changes hit both series alike), a generous band.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { describeOnBackends } from '../helpers/backends.js';
import { basic, clientFrom, listen, type Client } from '../helpers/from-address.js';

const SAMPLES = 30;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

describeOnBackends(
  'login timing does not tell which accounts exist (issue 19.6)',
  { timeout: 120_000 },
  ({ name, serverWith }) => {
    const clients: Client[] = [];
    afterEach(() => {
      for (const client of clients.splice(0)) client.close();
    });

    it('an unknown name costs as much as a wrong password for an existing one, and gets the same answer', async () => {
      const app = await serverWith({
        multiauth_policies: ['account'],
        account_create_principals: ['system.Everyone'],
        // Every sample is a failure from one address: keep the limits out of the measurement.
        account_login_max_failures: 1000,
        account_login_max_failures_per_ip: 1000,
      });
      const client = clientFrom('127.0.0.2', await listen(app));
      clients.push(client);
      expect((await client.send('PUT', '/v1/accounts/known', { body: { data: { password: 'right' } } })).status).toBe(
        201,
      );
      // The right password is now in the verified-password cache: it must not speed up either path.
      expect(
        (await client.send<{ user: { id: string } }>('GET', '/v1/', { headers: basic('known', 'right') })).json.user.id,
      ).toBe('account:known');

      // Warm-up (first verification, JIT, connection).
      for (let index = 0; index < 3; index++) {
        await client.send('GET', '/v1/', { headers: basic('known', `warm-${index}`) });
        await client.send('GET', '/v1/', { headers: basic(`warm-${randomUUID()}`, 'wrong') });
      }

      const existing: number[] = [];
      const unknown: number[] = [];
      const answers = new Set<string>();
      for (let index = 0; index < SAMPLES; index++) {
        // Alternate which goes first, so that neither series always follows the other.
        const pair = [
          async () => {
            const answer = await client.send('GET', '/v1/', { headers: basic('known', `wrong-${index}`) });
            existing.push(answer.ms);
            return answer;
          },
          async () => {
            const answer = await client.send('GET', '/v1/', {
              headers: basic(`nobody-${randomUUID()}`, `wrong-${index}`),
            });
            unknown.push(answer.ms);
            return answer;
          },
        ];
        if (index % 2 === 1) pair.reverse();
        for (const run of pair) {
          const answer = await run();
          answers.add(`${answer.status} ${JSON.stringify(answer.json)}`);
        }
      }

      const existingMedian = median(existing);
      const unknownMedian = median(unknown);
      const ratio = unknownMedian / existingMedian;
      console.log(
        `[${name}] login timing, median of ${SAMPLES} interleaved samples: wrong password for an existing account ` +
          `${existingMedian.toFixed(1)} ms, unknown name ${unknownMedian.toFixed(1)} ms (ratio ${ratio.toFixed(2)})`,
      );
      expect(ratio).toBeGreaterThanOrEqual(0.5);
      expect(ratio).toBeLessThanOrEqual(2);
      // One answer for both: the anonymous caller's `GET /` (no `user`), same body.
      expect([...answers]).toEqual([expect.stringMatching(/^200 /)]);
      expect([...answers][0]).not.toContain('"user"');
    });
  },
);

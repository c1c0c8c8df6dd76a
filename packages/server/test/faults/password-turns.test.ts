/**
 * Issue 36, shared caps: turns at argon2 are fair per address. One address floods the server
 * with logins that each cost a verification (unknown names: a dummy hash is checked, so that
 * the time tells nothing); another address's login with the right password, sent just after,
 * is answered after at most a turn or two of the flood's, not behind all of it. Real HTTP on
 * loopback from two addresses, both stores. Without the turns, the flood runs on libuv's four
 * threads in arrival order, and the bystander waits for every flooding login sent before it.
 */
import { expect, it } from 'vitest';
import { describeOnBackends } from '../helpers/backends.js';
import { basic, clientFrom, listen } from '../helpers/from-address.js';

const FLOOD = 40;

describeOnBackends('argon2 turns fair per address (issue 36)', { timeout: 120_000 }, ({ serverWith }) => {
  it(`a login with the right password from another address comes before ${FLOOD} flooding ones`, async () => {
    const app = await serverWith({
      multiauth_policies: ['account'],
      account_create_principals: ['system.Everyone'],
      account_password_checks_max_in_progress: 1,
      account_password_checks_max_queued_per_address: FLOOD,
      account_login_max_failures_per_ip: 10 * FLOOD,
    });
    const port = await listen(app);
    const hostile = clientFrom('127.0.0.3', port, FLOOD);
    const bystander = clientFrom('127.0.0.4', port, 1);
    try {
      expect((await bystander.send('PUT', '/v1/accounts/ann', { body: { data: { password: 'ann-pw' } } })).status).toBe(
        201,
      );
      const order: string[] = [];
      const flood = Array.from({ length: FLOOD }, (_, index) =>
        hostile.send('GET', '/v1/', { headers: basic(`nobody-${index}`, 'guess') }).then((answer) => {
          order.push('flood');
          return answer.status;
        }),
      );
      // Sent once the flood is surely waiting: two of it answered (one turn at a time).
      while (order.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      const sentAfter = order.length;
      const login = bystander.send<{ user?: { id: string } }>('GET', '/v1/', { headers: basic('ann', 'ann-pw') });
      const answer = await login.then((reply) => {
        order.push('login');
        return reply;
      });
      expect(answer.status).toBe(200);
      expect(answer.json.user?.id).toBe('account:ann');
      const statuses = await Promise.all(flood);
      // Flooding logins answered between the bystander's request and its answer.
      const before = order.indexOf('login') - sentAfter;
      console.log(
        `[password turns] the bystander's login, sent after ${sentAfter} flooding logins were answered, ` +
          `waited for ${before} more of the ${FLOOD}`,
      );
      // Unknown names: anonymous, as on the original (no `basicauth` after `account`).
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      // The turn in progress when it came, one of the flood's in rotation, answers on their way.
      expect(before).toBeLessThanOrEqual(6);
    } finally {
      hostile.close();
      bystander.close();
    }
  });
});

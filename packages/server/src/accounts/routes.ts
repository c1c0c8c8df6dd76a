/** Registers the accounts feature when the `account` policy is enabled (§13.2). */
import type { FastifyInstance } from 'fastify';
import { createMailer } from '../mail/mailer.js';
import { registerMethods, registerResource } from '../engine/routes.js';
import { createAccountResource } from './resource.js';
import { createAccountMails } from './mails.js';
import { findAccountPolicy } from './policy.js';
import { createValidationHandlers } from './validation.js';

export function registerAccounts(app: FastifyInstance): void {
  const { services } = app;
  const policy = findAccountPolicy(services.policies);
  if (!policy) return;
  const { settings } = services;

  services.capabilities.accounts = {
    description: 'Manage user accounts.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/accounts.html',
    validation_enabled: settings.account_validation,
  };
  policy.rates.setLogger(app.log);
  const mails = settings.account_validation ? createAccountMails(settings, createMailer(settings)) : null;
  app.addHook('onClose', async () => {
    mails?.close();
    await policy.rates.close();
  });

  registerResource(app, createAccountResource(services, policy, mails));

  if (mails) {
    const validation = createValidationHandlers(services, policy, mails, app.log);
    registerMethods(app, '/v1/accounts/:account_id/validate/:key', { POST: validation.validate });
    registerMethods(app, '/v1/accounts/:account_id/reset-password', { POST: validation.resetPassword });
  }
}

/**
 * The three mails of account validation (Kinto 1.22): the activation key on sign-up, the
 * confirmation once validated, the temporary password on reset. Templates come from settings;
 * placeholders are the account's fields (never its password), the secret of the mail, and any
 * `email-context` object the client sent — which cannot override the former.
 */
import type { AccountSettings } from './settings.js';
import type { Mailer } from '../mail/mailer.js';
import { renderSubject, renderTemplate, type TemplateValues } from '../mail/template.js';
import { isPlainObject } from '../engine/body.js';

export interface AccountMails {
  sendActivation(account: Record<string, unknown>, key: string, emailContext: unknown): Promise<void>;
  sendConfirmation(account: Record<string, unknown>): Promise<void>;
  sendTemporaryPassword(account: Record<string, unknown>, password: string, emailContext: unknown): Promise<void>;
  close(): void;
}

export function createAccountMails(settings: AccountSettings, mailer: Mailer): AccountMails {
  async function send(
    account: Record<string, unknown>,
    subject: string,
    body: string,
    extra: TemplateValues,
    emailContext: unknown,
  ) {
    const { password: _password, ...fields } = account;
    const values: TemplateValues = { ...(isPlainObject(emailContext) ? emailContext : {}), ...fields, ...extra };
    await mailer.send({
      to: String(account.id),
      subject: renderSubject(subject, values),
      text: renderTemplate(body, values),
    });
  }

  return {
    sendActivation(account, key, emailContext) {
      const link = settings.account_validation_link_template;
      const extra: TemplateValues = { 'activation-key': key };
      if (link !== null) {
        extra['validation-link'] = renderTemplate(link, {
          id: encodeURIComponent(String(account.id)),
          'activation-key': key,
        });
      }
      return send(
        account,
        settings.account_validation_email_subject_template,
        settings.account_validation_email_body_template,
        extra,
        emailContext,
      );
    },
    sendConfirmation(account) {
      return send(
        account,
        settings.account_validation_confirmation_subject_template,
        settings.account_validation_confirmation_body_template,
        {},
        undefined,
      );
    },
    sendTemporaryPassword(account, password, emailContext) {
      return send(
        account,
        settings.account_reset_password_subject_template,
        settings.account_reset_password_body_template,
        { 'reset-password': password },
        emailContext,
      );
    },
    close() {
      mailer.close();
    },
  };
}

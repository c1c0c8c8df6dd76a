/** Settings of the mails the server sends (mailer.ts): transport, SMTP server, sender. */
import { Type } from '@sinclair/typebox';
import { Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const MAIL_SETTINGS = {
  mail_transport: Type.String({
    default: 'smtp',
    description: 'How mail is sent: `smtp` (the `mail_host` server) or `sendmail` (the local sendmail binary).',
  }),
  mail_host: Type.String({ default: 'localhost', description: 'SMTP server host.' }),
  mail_port: Type.Integer({ default: 25, minimum: 1, maximum: 65535, description: 'SMTP server port.' }),
  mail_username: Nullable(Type.String(), { default: null, description: 'SMTP user name (unset: no authentication).' }),
  mail_password: Nullable(Type.String(), { default: null, secret: true, description: 'SMTP password.' }),
  mail_sender: Type.String({
    default: 'quire@localhost',
    description: '`From` address of the mails the server sends.',
  }),
  mail_tls: Type.Boolean({
    default: false,
    description: 'Connect to the SMTP server over TLS from the start (usually port 465).',
  }),
  mail_starttls: Type.Boolean({
    default: false,
    description: 'Require STARTTLS on a plain SMTP connection (refuse to send in clear).',
  }),
  mail_timeout_seconds: Type.Number({
    default: 10,
    minimum: 0.1,
    description: 'Time limit of each SMTP connection step.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type MailSettings = SettingValues<typeof MAIL_SETTINGS>;

/**
 * Outgoing mail (account validation and password reset) through nodemailer, configured by the
 * `mail_*` settings. Message contents are secrets (keys, temporary passwords): they are never
 * logged, and errors are reported without them.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { ConfigError } from '../settings/config-error.js';
import type { MailSettings } from './settings.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export class MailError extends Error {
  override name = 'MailError';
}

const TRANSPORTS = new Set(['smtp', 'sendmail']);

function createTransport(settings: MailSettings): Transporter {
  if (settings.mail_transport === 'sendmail') return nodemailer.createTransport({ sendmail: true });
  const timeout = Math.round(settings.mail_timeout_seconds * 1000);
  return nodemailer.createTransport({
    host: settings.mail_host,
    port: settings.mail_port,
    secure: settings.mail_tls,
    requireTLS: settings.mail_starttls,
    ...(settings.mail_username !== null
      ? { auth: { user: settings.mail_username, pass: settings.mail_password ?? '' } }
      : {}),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    // nodemailer's own logger would print message contents.
    logger: false,
    debug: false,
  });
}

export function createMailer(settings: MailSettings): Mailer {
  if (!TRANSPORTS.has(settings.mail_transport)) {
    throw new ConfigError(
      `Invalid setting mail_transport: "${settings.mail_transport}" (one of ${[...TRANSPORTS].join(', ')})`,
    );
  }
  let transport: Transporter | null = null;
  return {
    async send(message) {
      transport ??= createTransport(settings);
      try {
        await transport.sendMail({
          from: settings.mail_sender,
          to: message.to,
          subject: message.subject,
          text: message.text,
        });
      } catch (error) {
        // The error of a failed delivery may quote the SMTP dialogue, never the body: keep its code only.
        const code = (error as { code?: unknown }).code;
        throw new MailError(`Mail could not be sent${typeof code === 'string' ? ` (${code})` : ''}`);
      }
    },
    close() {
      transport?.close();
      transport = null;
    },
  };
}

import { randomUUID } from 'node:crypto';
import nodemailer from 'nodemailer';

// Where queued messages go. By default the log/DB transport: the message row itself,
// marked SENT with a log provider id, is the delivery (the console shows it). With
// SMTP_URL set, nodemailer delivers through that server.

export interface MailTransport {
  name: string;
  /** `messageId` is the Message row being delivered (for a provider's ledger or headers). */
  send(message: { to: string; subject: string; body: string; from: string; messageId?: string }): Promise<{ providerId: string }>;
  close?(): void;
}

export function logTransport(log: (line: string) => void): MailTransport {
  return {
    name: 'log',
    async send(message) {
      const providerId = `log:${randomUUID()}`;
      log(`mail to=${message.to} subject=${JSON.stringify(message.subject)} id=${providerId}`);
      return { providerId };
    },
  };
}

export function smtpTransport(url: string): MailTransport {
  const transporter = nodemailer.createTransport(url);
  return {
    name: 'smtp',
    async send(message) {
      const info = await transporter.sendMail({
        from: message.from,
        to: message.to,
        subject: message.subject,
        text: message.body,
      });
      return { providerId: `smtp:${info.messageId}` };
    },
    close: () => transporter.close(),
  };
}

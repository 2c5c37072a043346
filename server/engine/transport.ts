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

/**
 * The bound on each phase of an SMTP delivery (connecting, the server's greeting, every
 * wait for an answer on the socket): a third of the sender's lease, at most 10 s (for
 * nodemailer it is 2 to 10 minutes). A provider that stops answering fails the send
 * well before anyone could take the sender for dead; the sender renews its lease
 * meanwhile (server/engine/sender.ts).
 */
export function transportTimeoutMs(leaseSeconds: number): number {
  return Math.max(250, Math.min(10_000, Math.floor((leaseSeconds * 1000) / 3)));
}

export function smtpTransport(url: string, opts: { timeoutMs?: number } = {}): MailTransport {
  const timeoutMs = opts.timeoutMs ?? transportTimeoutMs(30);
  // The URL's own settings (host, auth, ?secure=…) are read from `url`; the bounds beside it.
  const transporter = nodemailer.createTransport({
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
  });
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

import { appendFileSync, readFileSync } from 'node:fs';
import { faults } from './faults';
import type { MailTransport } from './transport';

// Fault injection for `npm run drill` only (off unless WAYPOST_FAULT_MAIL_CONTROL is set,
// never in production): wraps a worker's transport so the drill can make the "provider"
// refuse mail or hang, and keeps the provider's side of the story in a ledger file.
//
// The control file holds one word: `ok` (deliver), `fail` (refuse every send), `hang`
// (hold every send until the word changes, then act on the new word), or `hang-after`
// (deliver, then hold the answer until the word changes: the provider has the email but
// the sender does not know yet), so a sender can be left SENDING past its lease, or be
// killed there, on either side of the provider accepting the email. A word may name the
// workers it applies to, `hang:0,1`: a worker whose WAYPOST_FAULT_MAIL_WORKER is not
// listed delivers as usual (a provider hanging on some connections, not all). Each accepted send appends one JSON line
// {messageId, providerId, at} to the ledger before it returns: what the provider has,
// whatever the worker manages to record afterwards (it may be SIGKILLed in between).
// The drill reads the ledger to decide MARK_SENT against RESEND, as an operator checking
// the provider would, and to count deliveries per message.

type Mode = 'ok' | 'fail' | 'hang' | 'hang-after';

const THIS_WORKER = faults.mailWorker;

function modeOf(controlFile: string): Mode {
  try {
    const [word = '', only] = readFileSync(controlFile, 'utf8').trim().split(':');
    if (only !== undefined && (THIS_WORKER === null || !only.split(',').includes(THIS_WORKER))) return 'ok';
    return word === 'fail' || word === 'hang' || word === 'hang-after' ? word : 'ok';
  } catch {
    return 'ok';
  }
}

export function faultInjectingTransport(inner: MailTransport, opts: { controlFile: string; ledgerFile: string | null }): MailTransport {
  return {
    name: `${inner.name}+faults`,
    async send(message) {
      let mode = modeOf(opts.controlFile);
      while (mode === 'hang') {
        await new Promise((r) => setTimeout(r, 200));
        mode = modeOf(opts.controlFile);
      }
      if (mode === 'fail') throw new Error('drill: the mail provider refused the message (injected fault)');
      const sent = await inner.send(message);
      if (opts.ledgerFile) {
        appendFileSync(opts.ledgerFile, `${JSON.stringify({ messageId: message.messageId ?? null, providerId: sent.providerId, at: new Date().toISOString() })}\n`);
      }
      while (mode === 'hang-after') {
        await new Promise((r) => setTimeout(r, 200));
        mode = modeOf(opts.controlFile);
      }
      return sent;
    },
    close: inner.close,
  };
}

/** The worker's transport, wrapped in the drill's provider when the drill configured one (faults.ts). */
export function withDrillFaults(inner: MailTransport): MailTransport {
  return faults.mail ? faultInjectingTransport(inner, faults.mail) : inner;
}

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { faultInjectingTransport } from '../../server/engine/fault-transport';
import type { MailTransport } from '../../server/engine/transport';

// The drill's mail provider: refuses or holds sends on cue, and its ledger records what it
// accepted, whatever the sender manages to write afterwards.

let dir: string;
let control: string;
let ledger: string;
const inner: MailTransport = { name: 'log', send: async () => ({ providerId: `log:${Math.random()}` }) };
const message = { to: 'a@drill.example', subject: 's', body: 'b', from: 'f', messageId: 'm-1' };
const deliveries = () => readFileSync(ledger, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { messageId: string });

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'waypost-fault-transport-'));
  control = path.join(dir, 'control');
  ledger = path.join(dir, 'ledger.jsonl');
  writeFileSync(ledger, '');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the drill\'s fault-injecting mail transport', () => {
  it('delivers and records the delivery in the ledger when told ok (or given no control file)', async () => {
    const t = faultInjectingTransport(inner, { controlFile: control, ledgerFile: ledger });
    await t.send(message);
    writeFileSync(control, 'ok');
    await t.send({ ...message, messageId: 'm-2' });
    expect(deliveries().map((d) => d.messageId)).toEqual(['m-1', 'm-2']);
  });

  it('refuses every send when told fail, and the provider has nothing', async () => {
    writeFileSync(control, 'fail');
    const t = faultInjectingTransport(inner, { controlFile: control, ledgerFile: ledger });
    await expect(t.send(message)).rejects.toThrow(/injected fault/);
    expect(deliveries()).toEqual([]);
  });

  it('hang holds a send before the provider has it; hang-after holds the answer after it has it', async () => {
    writeFileSync(control, 'hang');
    const t = faultInjectingTransport(inner, { controlFile: control, ledgerFile: ledger });
    let answered = false;
    const sending = t.send(message).then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(answered).toBe(false);
    expect(deliveries()).toEqual([]);
    writeFileSync(control, 'hang-after');
    for (let i = 0; i < 100 && deliveries().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(deliveries().map((d) => d.messageId)).toEqual(['m-1']);
    expect(answered).toBe(false);
    writeFileSync(control, 'ok');
    await sending;
    expect(deliveries()).toHaveLength(1);
  });

  it('a fault that names workers leaves the others alone', async () => {
    writeFileSync(control, 'fail:7,8');
    const t = faultInjectingTransport(inner, { controlFile: control, ledgerFile: ledger });
    // This process is no listed worker (WAYPOST_FAULT_MAIL_WORKER unset): it delivers.
    await t.send(message);
    expect(deliveries()).toHaveLength(1);
  });
});

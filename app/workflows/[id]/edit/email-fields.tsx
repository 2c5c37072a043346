'use client';

import { useMutation, useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { useTRPC } from '../../../_trpc/client';
import { Field, inputClass } from './fields';
import { issuesAt, type FieldIssue } from './validation';
import type { ConfigProps } from './config-fields';

// A SEND_EMAIL step: its subject and body (Liquid: {{contact.firstName}} is the
// contact's data.firstName), checked as typed with the step's own schema, rendered live
// for a real contact of the project by templates.preview (what the worker would send
// them), and sent once to the signed-in person with "Send test to me".

type Rendered = { subject: string | null; body: string | null; contact: { id: string; email: string } | null; issues: { field: 'subject' | 'body'; message: string; line?: number; column?: number }[] };

const PREVIEW_DELAY_MS = 350;
const PREVIEW_CONTACT_KEY = 'waypost.preview-contact';

function ContactPicker({ contactId, chosen, onChange }: { contactId: string | null; chosen: { id: string; email: string } | null; onChange: (id: string | null) => void }) {
  const trpc = useTRPC();
  const [search, setSearch] = useState('');
  const [typed, setTyped] = useState('');
  useEffect(() => {
    const t = setTimeout(() => setSearch(typed.trim()), 250);
    return () => clearTimeout(t);
  }, [typed]);
  const contacts = useQuery({ ...trpc.contacts.list.queryOptions({ ...(search ? { search } : {}), limit: 20 }), placeholderData: (prev) => prev });
  const items = contacts.data?.items ?? [];
  return (
    <div className="flex items-center gap-1.5 text-xs">
      <label htmlFor="preview-contact" className="shrink-0 text-zinc-600">
        Preview for
      </label>
      <input
        aria-label="Find a contact by email"
        value={typed}
        onChange={(e) => setTyped(e.target.value)}
        placeholder="search email…"
        className="w-28 min-w-0 rounded border border-zinc-300 px-1.5 py-0.5 text-xs"
      />
      <select
        id="preview-contact"
        value={contactId ?? ''}
        onChange={(e) => onChange(e.target.value || null)}
        className="min-w-0 flex-1 truncate rounded border border-zinc-300 bg-white px-1 py-0.5 text-xs"
      >
        <option value="">newest contact</option>
        {/* The chosen contact stays listed when a search no longer finds it. */}
        {contactId && chosen?.id === contactId && !items.some((c) => c.id === contactId) && <option value={chosen.id}>{chosen.email}</option>}
        {items.map((c) => (
          <option key={c.id} value={c.id}>
            {c.email}
          </option>
        ))}
      </select>
    </div>
  );
}

export function EmailFields({ config, issues, onChange, disabled }: ConfigProps) {
  const trpc = useTRPC();
  const subject = typeof config.subject === 'string' ? config.subject : '';
  const body = typeof config.body === 'string' ? config.body : '';
  // The contact chosen for previews stays chosen from step to step and across reloads of this tab.
  const [contactId, setContactIdState] = useState<string | null>(() => {
    try {
      return typeof window === 'undefined' ? null : sessionStorage.getItem(PREVIEW_CONTACT_KEY);
    } catch {
      return null;
    }
  });
  const setContactId = (next: string | null) => {
    setContactIdState(next);
    try {
      if (next) sessionStorage.setItem(PREVIEW_CONTACT_KEY, next);
      else sessionStorage.removeItem(PREVIEW_CONTACT_KEY);
    } catch {
      // Chosen for this page only.
    }
  };
  const [shown, setShown] = useState<{ result: Rendered; for: string } | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const latest = useRef(0);
  const preview = useMutation(trpc.templates.preview.mutationOptions());
  const testSend = useMutation(trpc.templates.testSend.mutationOptions());
  const { mutateAsync } = preview;

  // The preview follows the typing, a moment behind; an answer to an older text is dropped.
  const request = JSON.stringify([subject, body, contactId]);
  useEffect(() => {
    const n = ++latest.current;
    const timer = setTimeout(() => {
      mutateAsync({ subject, body, ...(contactId ? { contactId } : {}) })
        .then((result) => {
          if (n !== latest.current) return;
          setShown({ result: result as Rendered, for: request });
          setPreviewError(null);
        })
        .catch((error: { message: string; data?: { code?: string } | null }) => {
          if (n !== latest.current) return;
          // A remembered contact that is gone (or of another project): preview for the newest instead.
          if (contactId && error.data?.code === 'NOT_FOUND') setContactId(null);
          else setPreviewError(error.message);
        });
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [request]);

  const result = shown?.result;
  const stale = shown?.for !== request;
  const templateProblems = (field: 'subject' | 'body') =>
    (result?.issues ?? []).filter((i) => i.field === field).map((i) => (i.line !== undefined ? `${i.message} (line ${i.line}, column ${i.column})` : i.message));
  const own = (field: string) => issuesAt(issues as FieldIssue[] | undefined, `config.${field}`);
  const uniq = (a: string[]) => [...new Set(a)];
  const subjectProblems = uniq(own('subject'));
  const bodyProblems = uniq(own('body'));
  const sendable = subject.trim() !== '' && body !== '' && subjectProblems.length === 0 && bodyProblems.length === 0 && !disabled;

  return (
    <>
      <Field label="Subject" problems={subjectProblems.length ? subjectProblems : stale ? [] : templateProblems('subject')}>
        {(props) => (
          <input {...props} value={subject} disabled={disabled} onChange={(e) => onChange({ ...config, subject: e.target.value })} className={inputClass} data-testid="email-subject" />
        )}
      </Field>
      <Field label="Body" hint="plain text, Liquid: {{contact.firstName}}" problems={bodyProblems.length ? bodyProblems : stale ? [] : templateProblems('body')}>
        {(props) => (
          <textarea
            {...props}
            value={body}
            rows={6}
            disabled={disabled}
            onChange={(e) => onChange({ ...config, body: e.target.value })}
            className={`${inputClass} resize-y font-mono text-[12px] leading-[18px]`}
            data-testid="email-body"
          />
        )}
      </Field>
      <section aria-label="Rendered preview" className="rounded border border-zinc-200 bg-zinc-50" data-testid="email-preview">
        <div className="border-b border-zinc-200 px-2 py-1.5">
          <ContactPicker contactId={contactId} chosen={shown?.result.contact ?? null} onChange={setContactId} />
        </div>
        <div className="min-h-[7.5rem] px-2.5 py-2" aria-live="polite" aria-busy={stale}>
          {previewError ? (
            <p role="alert" className="text-xs text-red-700">
              No preview: {previewError}
            </p>
          ) : !result ? (
            <p className="text-xs text-zinc-500">Rendering…</p>
          ) : (
            <div className={stale ? 'opacity-60 transition-opacity' : ''}>
              <p className="text-[11px] text-zinc-500">
                To <span className="font-medium text-zinc-700">{result.contact?.email ?? 'a sample contact (the project has none)'}</span>
                {stale && <span className="ml-1.5">· updating…</span>}
              </p>
              <p className="mt-0.5 text-[13px] font-semibold break-words text-zinc-900" data-testid="preview-subject">
                {result.subject ?? <span className="font-normal text-red-700">the subject cannot be rendered</span>}
              </p>
              <p className="mt-1 max-h-48 overflow-auto text-[12.5px] break-words whitespace-pre-wrap text-zinc-800" data-testid="preview-body">
                {result.body ?? <span className="text-red-700">the body cannot be rendered</span>}
              </p>
            </div>
          )}
        </div>
        <div className="flex items-center gap-2 border-t border-zinc-200 px-2 py-1.5">
          <button
            type="button"
            disabled={!sendable || testSend.isPending}
            onClick={() => testSend.mutate({ subject, body, ...(contactId ? { contactId } : {}) })}
            className="shrink-0 rounded bg-white px-2 py-0.5 text-xs font-medium text-zinc-800 ring-1 ring-zinc-300 hover:bg-zinc-100 disabled:text-zinc-400"
          >
            {testSend.isPending ? 'Sending…' : 'Send test to me'}
          </button>
          <span role="status" className="min-w-0 text-xs">
            {testSend.error ? (
              <span className="text-red-700">Not sent: {testSend.error.message}</span>
            ) : testSend.data ? (
              <span className="text-emerald-700">
                Sent to {testSend.data.to}
                {testSend.data.transport === 'log' ? ' (no SMTP configured: written to the server log)' : ''}
              </span>
            ) : (
              <span className="text-zinc-500">rendered for the contact above, sent to your own address</span>
            )}
          </span>
        </div>
      </section>
    </>
  );
}

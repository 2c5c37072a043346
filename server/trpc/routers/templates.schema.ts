import { z } from 'zod';
import { id, text } from '../../common/inputs';
import { describeTemplateIssue, templateIssues } from '../../common/templates';

// A SEND_EMAIL step's subject and body as the editor holds them, bounded as the step's
// config is (server/common/workflow-definition.ts).

export const previewTemplateInput = z.object({
  subject: text(300),
  body: text(50_000),
  /** The contact to render for; left out, the project's most recently created contact. */
  contactId: id.optional(),
});

/** A template that does not parse sends nothing: BAD_REQUEST with the error at `subject` or `body`. */
function parses(template: string, ctx: z.RefinementCtx): void {
  for (const issue of templateIssues(template)) ctx.addIssue({ code: 'custom', message: describeTemplateIssue(issue) });
}

export const testSendInput = z.object({
  subject: text(300, 1).superRefine(parses),
  body: text(50_000, 1).superRefine(parses),
  contactId: id.optional(),
});

import { marketerProcedure, router, viewerProcedure } from '../trpc';
import { previewTemplate, sendTestEmail } from './templates.render';
import { previewTemplateInput, testSendInput } from './templates.schema';

// A SEND_EMAIL step's templates (Liquid, server/common/templates.ts) before they go out:
// rendered for a real contact of the project, and sent once to oneself.

export const templatesRouter = router({
  /**
   * The subject and body rendered for `contactId` (NOT_FOUND outside the project), else the
   * project's most recently created contact, else a sample (`contact: null`). A syntax
   * error comes back in `issues`, with that field null. A mutation that writes nothing: a
   * 50,000-character body does not fit in a GET's URL (Node refuses headers past 16 KB).
   */
  preview: viewerProcedure.input(previewTemplateInput).mutation(({ ctx, input }) => previewTemplate(ctx, input)),

  /**
   * One test email, rendered as preview renders it, to the signed-in person's own address
   * through the deployment's mail transport; audited. API keys have no address: BAD_REQUEST.
   */
  testSend: marketerProcedure.input(testSendInput).mutation(({ ctx, input }) => sendTestEmail(ctx, input)),
});

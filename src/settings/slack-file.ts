import * as z from 'zod';

/**
 * The `slack:` section of hermes.config.yaml: what the Slack app shows in its assistant threads.
 * `suggested_prompts` are the buttons a person sees when they open a new assistant thread; Slack
 * takes one to four, each a short title and the message it sends when clicked.
 */
const promptSchema = z
  .object({
    title: z.string().trim().min(1, { error: 'needs a title (the button text)' }).max(75, { error: 'title is longer than 75 characters' }),
    message: z.string().trim().min(1, { error: 'needs a message (what the click sends)' }).max(2000, { error: 'message is longer than 2000 characters' }),
  })
  .strict();

export const slackFileSchema = z
  .object({
    suggested_prompts: z.array(promptSchema).min(1, { error: 'needs at least one prompt (or leave the key out for the defaults)' }).max(4, { error: 'Slack shows at most 4 suggested prompts' }).optional(),
  })
  .strict();

export interface SuggestedPrompt {
  title: string;
  message: string;
}

export const DEFAULT_SUGGESTED_PROMPTS: readonly SuggestedPrompt[] = [
  { title: 'What can you do?', message: 'What can you do, and which tools can you use here?' },
  { title: 'Summarise a page', message: 'I want a summary of a web page. Ask me for the link, then summarise it in five bullet points.' },
  { title: 'Set a reminder', message: 'I want to set a reminder. Ask me what it is about and when.' },
];

export function suggestedPrompts(file: z.infer<typeof slackFileSchema> | undefined): SuggestedPrompt[] {
  return (file?.suggested_prompts ?? DEFAULT_SUGGESTED_PROMPTS).map((p) => ({ title: p.title, message: p.message }));
}

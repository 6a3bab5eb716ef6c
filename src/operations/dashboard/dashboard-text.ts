/**
 * What a person reads when the dashboard refuses or cannot answer a request, each message in one
 * place (the sign-in messages are in pages/login.ts, the replay refusals in replay-runner.ts).
 */
export const REQUEST_TEXT = {
  foreignSignIn: 'Sign-in from another site was refused.',
  foreignForm: 'This form was not sent from a dashboard page of this session; reload the page and try again.',
  formTooLarge: 'That form is too large.',
  failed: "The dashboard could not show this page; the error is in the bot's log.",
  notFound: 'Not found.',
  methodNotAllowed: 'Method not allowed.',
  noSuchTurn: 'No such turn',
  noTurn: (turnId: string) => `No turn ${turnId} in the traces.`,
  noSuchReplay: 'No such replay',
  replaysKept: 'Replays are kept in memory until the bot restarts (the last 20).',
  noReplay: 'Replay is not available here.',
  allTurns: 'All turns',
  backToTurn: 'Back to the turn',
  noAudit: 'The audit record is not available in this dashboard (it is shown by the running bot).',
} as const;

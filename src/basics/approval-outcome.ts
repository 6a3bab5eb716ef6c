/** How an approval ended, as the person and the model are told. */
export type ApprovalOutcome = 'approved' | 'denied' | 'expired' | 'cancelled';

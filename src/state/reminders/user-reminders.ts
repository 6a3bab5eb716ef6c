/** A reminder as tools and commands see it, and the speaker-scoped view of the reminder store. */

export interface ReminderView {
  id: string;
  text: string;
  dueAt: number;
  createdAt: number;
  status: 'scheduled' | 'fired' | 'cancelled';
}

/** The speaking user's reminders, posting back into the current conversation. */
export interface UserReminders {
  create(text: string, dueAt: number): Promise<ReminderView>;
  list(): Promise<ReminderView[]>;
  cancel(id: string): Promise<boolean>;
}

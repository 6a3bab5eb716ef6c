/**
 * A reason not to start that the operator must fix (another instance owns the SQLite file, the
 * database schema is newer than this code). main prints the message and exits 2, like a config
 * error, instead of the generic start failure (exit 1) a crash would give.
 */
export class StartupRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupRefusal';
  }
}

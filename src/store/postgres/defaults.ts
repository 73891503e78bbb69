/** Defaults of the PostgreSQL store that need no driver, so the main export can name them without loading `pg`. */

/** The schema of every table when neither the options nor the URL name one. */
export const DEFAULT_POSTGRES_SCHEMA = 'agentstate';

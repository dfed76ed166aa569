/** `tasklease migrate`: create or upgrade the schema; safe on every deploy and from several hosts at once. */
import { action, type CliCommand } from '../command.js';

export const migrateCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('migrate')
      .description('create or upgrade the database schema (idempotent; run after every upgrade)')
      .action(
        action(ctx, async () => {
          const store = await ctx.openStore();
          // A database never migrated may have no version table yet: that is version 0.
          const previousVersion = await store.schemaVersion().catch(() => 0);
          await store.migrate();
          const schemaVersion = await store.schemaVersion();
          ctx.output.result({ dialect: store.dialect, previousVersion, schemaVersion }, () =>
            previousVersion === schemaVersion
              ? `${store.dialect}: schema already at version ${schemaVersion}`
              : `${store.dialect}: schema migrated from version ${previousVersion} to ${schemaVersion}`,
          );
        }),
      );
  },
};

import { type DatabaseConfig, loadDatabaseConfig, loadSystemFrom } from '../config.js';
import { configureSystemEmail } from '../modules/emails/index.js';
import { type Command, commandHelp, overallHelp } from './command.js';
import { commands } from './commands/index.js';
import { openCliDatabase } from './database.js';
import { UsageError } from './flags.js';
import { print, printError } from './io.js';

// Operator CLI: `npm run admin -- <command> [flags]`. Exit codes: 0 done, 1 a failure the
// operator can fix (one `error:` line), 2 a usage mistake (with the usage).

/** Any failure as one line: the operator sees what to fix, never a stack trace. */
function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${message}${cause}`.replace(/\s*\n\s*/g, ' ');
}

const findCommand = (name: string): Command | undefined => commands.find((c) => c.name === name);

function usageError(message: string, usage: string): number {
  printError(`error: ${message}\n\n${usage}`);
  return 2;
}

function help(topic: string | undefined): number {
  if (topic === undefined) {
    print(overallHelp(commands));
    return 0;
  }
  const command = findCommand(topic);
  if (!command) return usageError(`unknown command "${topic}"`, overallHelp(commands));
  print(commandHelp(command));
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) return usageError('no command given', overallHelp(commands));
  if (name === 'help' || name === '--help' || name === '-h') return help(rest[0]);
  const command = findCommand(name);
  if (!command) return usageError(`unknown command "${name}"`, overallHelp(commands));
  if (rest.includes('--help')) return help(name);

  let run: (config: DatabaseConfig) => Promise<void>;
  try {
    run = prepare(command, rest);
  } catch (err) {
    if (err instanceof UsageError) return usageError(err.message, commandHelp(command));
    throw err;
  }

  // Flags are checked before this point, so a typo never waits for PostgreSQL to start.
  // Commands may email (disable-project notifies the project's owners): SYSTEM_FROM as the server reads it.
  configureSystemEmail({ from: loadSystemFrom() });
  await run(loadDatabaseConfig());
  return 0;
}

/**
 * Parses the flags (throws UsageError/CliError) and returns the work. Which database was opened
 * goes to stderr: stdout stays the command's output, fit for scripts.
 */
function prepare(command: Command, argv: readonly string[]): (config: DatabaseConfig) => Promise<void> {
  if (!command.opensDatabase) {
    const work = command.parse(argv);
    return (config) => work(config, print, printError);
  }
  const work = command.parse(argv);
  return async (config) => {
    const database = await openCliDatabase(config, printError);
    try {
      await work(database.db, print);
    } catch (err) {
      await database.close().catch(() => undefined);
      throw err;
    }
    await database.close();
  };
}

// Interrupted while the embedded PostgreSQL runs: leave through 'exit', whose hook stops it.
process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    printError(`error: ${oneLine(err)}`);
    process.exitCode = 1;
  },
);

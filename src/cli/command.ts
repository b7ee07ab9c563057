import type { Kysely } from 'kysely';
import type { DatabaseConfig } from '../config.js';
import type { Database } from '../db/schema.js';
import { type FlagSpecs, type FlagValues, flagsSynopsis, parseFlags } from './flags.js';

export interface CommandContext<F extends FlagSpecs> {
  readonly db: Kysely<Database>;
  readonly flags: FlagValues<F>;
  /** Writes one line to stdout. */
  readonly print: (line: string) => void;
}

/** How a command is written: its flags and what it does with them. */
export interface CommandDefinition<F extends FlagSpecs> {
  /** What the operator types: `create-user`. */
  readonly name: string;
  /** One line for `help`. */
  readonly summary: string;
  readonly flags: F;
  /** Throw a CliError (or an ApiError) for failures the operator can fix. */
  run(ctx: CommandContext<F>): Promise<void>;
}

export interface StandaloneContext<F extends FlagSpecs> {
  /** Where the server's database is (DATA_DIR, DATABASE_URL): the command opens it, or not, itself. */
  readonly config: DatabaseConfig;
  readonly flags: FlagValues<F>;
  /** Writes one line to stdout (the result). */
  readonly print: (line: string) => void;
  /** Writes one line to stderr (progress, which database). */
  readonly note: (line: string) => void;
}

/** A command for which no database is opened before it runs (backup, restore): it decides itself. */
export interface StandaloneDefinition<F extends FlagSpecs> {
  readonly name: string;
  readonly summary: string;
  readonly flags: F;
  run(ctx: StandaloneContext<F>): Promise<void>;
}

interface CommandBase {
  readonly name: string;
  readonly summary: string;
  readonly flags: FlagSpecs;
  /** `create-user --email EMAIL --password PASSWORD [--admin]` */
  readonly usage: string;
}

/** A command of the table, its flag types erased: flags are parsed before the database opens. */
export interface DatabaseCommand extends CommandBase {
  readonly opensDatabase: true;
  /** Parses argv (throws UsageError/CliError) and returns the work to do once the database is open. */
  parse(argv: readonly string[]): (db: Kysely<Database>, print: (line: string) => void) => Promise<void>;
}

/** A command given only where the database is (backup, restore). */
export interface StandaloneCommand extends CommandBase {
  readonly opensDatabase: false;
  /** Parses argv (throws UsageError/CliError) and returns the work to do. */
  parse(argv: readonly string[]): (config: DatabaseConfig, print: (line: string) => void, note: (line: string) => void) => Promise<void>;
}

export type Command = DatabaseCommand | StandaloneCommand;

const usageOf = (name: string, flags: FlagSpecs) => {
  const synopsis = flagsSynopsis(flags);
  return synopsis ? `${name} ${synopsis}` : name;
};

export function defineCommand<F extends FlagSpecs>(def: CommandDefinition<F>): DatabaseCommand {
  return {
    name: def.name,
    summary: def.summary,
    flags: def.flags,
    usage: usageOf(def.name, def.flags),
    opensDatabase: true,
    parse(argv) {
      const flags = parseFlags(def.flags, argv);
      return (db, print) => def.run({ db, flags, print });
    },
  };
}

export function defineStandaloneCommand<F extends FlagSpecs>(def: StandaloneDefinition<F>): StandaloneCommand {
  return {
    name: def.name,
    summary: def.summary,
    flags: def.flags,
    usage: usageOf(def.name, def.flags),
    opensDatabase: false,
    parse(argv) {
      const flags = parseFlags(def.flags, argv);
      return (config, print, note) => def.run({ config, flags, print, note });
    },
  };
}

/** The detailed usage of one command: synopsis, summary and each flag. */
export function commandHelp(command: Command): string {
  const lines = [`usage: npm run admin -- ${command.usage}`, '', `  ${command.summary}`];
  const flags = Object.entries(command.flags);
  if (flags.length > 0) lines.push('');
  for (const [name, spec] of flags) {
    const label = spec.type === 'boolean' ? `--${name}` : `--${name} ${spec.value}`;
    lines.push(`  ${label.padEnd(24)} ${spec.description}`);
  }
  return lines.join('\n');
}

/** The list of every command. */
export function overallHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  return [
    'usage: npm run admin -- <command> [flags]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)} ${c.summary}`),
    `  ${'help'.padEnd(width)} this list; "help <command>" for a command's flags`,
    '',
    'Database: the server\'s, by the same rules: DATABASE_URL when set, else the embedded',
    'PostgreSQL under DATA_DIR (default ./data; the running server\'s, or started for the',
    'duration of the command). It never creates one: start the server once first.',
  ].join('\n');
}

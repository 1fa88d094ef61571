/**
 * `--name value` command-line flags with defaults. An unknown flag or a flag without its value is
 * an error, so a typo in a soak command fails at once instead of running the wrong size.
 */
export function parseFlags<T extends Record<string, string>>(argv: readonly string[], defaults: T): T {
  const values: Record<string, string> = { ...defaults };
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match || !(match[1]! in defaults)) {
      throw new Error(
        `unknown argument "${arg}" (known: ${Object.keys(defaults)
          .map((k) => `--${k}`)
          .join(", ")})`,
      );
    }
    const value = match[2] ?? args[++i];
    if (value === undefined) throw new Error(`--${match[1]} needs a value`);
    values[match[1]!] = value;
  }
  return values as T;
}
